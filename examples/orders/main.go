// Command orders is the seed article's order API in Go: POST /orders
// answers 202 for known API keys, at most 5 orders a minute per client,
// limited by rlserver through the client package's middleware. A refused
// order gets 429 with Retry-After, the RateLimit-Policy and RateLimit
// fields, and a problem+json body.
//
//	go run ./cmd/rlserver --in-memory &
//	go run ./examples/orders
//	curl -si -X POST -H "X-Api-Key: key-ada-123" http://127.0.0.1:8080/orders
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve the API on")
	servers := flag.String("rlserver", "127.0.0.1:6380", "rlserver address; several, comma-separated, for a cluster")
	fail := flag.String("fail", "local", "when rlserver cannot answer: open, closed or local")
	instances := flag.Int("instances", 1, "instances of this API behind the load balancer (sizes the local fallback)")
	timeout := flag.Duration("timeout", 200*time.Millisecond, "longest wait for rlserver's decision")
	flag.Parse()

	mode, err := parseFailMode(*fail)
	if err != nil {
		return err
	}
	rdb := newRedis(strings.Split(*servers, ","))
	defer rdb.Close()
	app, err := newApp(appConfig{limiter: client.New(rdb), unavailable: mode, instances: *instances, timeout: *timeout})
	if err != nil {
		return err
	}

	srv := &http.Server{Addr: *listen, Handler: app, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	slog.Info("orders listening", "addr", *listen, "rlserver", *servers, "fail", mode.String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newRedis is a go-redis client set up for a limiter: one address is a
// single node, several a cluster. Context deadlines bound the socket I/O,
// a failed dial is not retried (the breaker does that), and decisions are
// not retried (a retried decision may be counted twice).
func newRedis(addrs []string) redis.UniversalClient {
	if len(addrs) == 1 {
		return redis.NewClient(&redis.Options{
			Addr: addrs[0], ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		})
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		// go-redis reloads the slot map only after MOVED or every 60 s;
		// after a node dies that is too long (docs/cluster.md).
		ClusterStateReloadInterval: time.Second,
	})
}

func parseFailMode(s string) (client.FailMode, error) {
	switch s {
	case "open":
		return client.FailOpen, nil
	case "closed":
		return client.FailClosed, nil
	case "local":
		return client.FailLocal, nil
	}
	return 0, fmt.Errorf("-fail %q: want open, closed or local", s)
}
