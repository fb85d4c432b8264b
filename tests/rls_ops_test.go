package tests

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// limitConfig is a one-rule config: perMinute requests a minute per user.
func limitConfig(perMinute int) map[string]string {
	return map[string]string{"api.yaml": fmt.Sprintf(`domain: api
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: %d
`, perMinute)}
}

// currentLimit is the requests_per_unit a descriptor is answered with.
func (s *rlsServer) currentLimit(t testing.TB) uint32 {
	return s.ask(t, "api", 0, descriptor("user", "probe")).Statuses[0].GetCurrentLimit().GetRequestsPerUnit()
}

// A changed config takes effect without a restart while calls keep coming:
// none fails, and the new limit answers from then on. A bad one is refused,
// saying why with its file and line, and the old one stays; SIGHUP reloads
// at once.
func TestRLSReloadUnderLoad(t *testing.T) {
	s := startRLS(t, limitConfig(1_000_000))
	ctx, cancel := context.WithCancel(context.Background())
	var calls, failures atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := descriptor("user", "load-"+strconv.Itoa(w))
			for ctx.Err() == nil {
				c, stop := context.WithTimeout(ctx, 5*time.Second)
				_, err := s.rl.ShouldRateLimit(c, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{d}})
				stop()
				if err != nil && ctx.Err() == nil {
					failures.Add(1)
				}
				calls.Add(1)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, "calls under way", func() bool { return calls.Load() > 100 })

	writeRLSConfig(t, s.config, limitConfig(500))
	waitFor(t, "the new limit in force", func() bool { return s.currentLimit(t) == 500 })

	writeRLSConfig(t, s.config, map[string]string{"api.yaml": "domain: api\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 5\n"})
	waitFor(t, "the refusal logged", func() bool {
		return strings.Contains(s.proc.Log(), "rate limit config not reloaded") && strings.Contains(s.proc.Log(), "api.yaml:5")
	})
	if got := s.currentLimit(t); got != 500 {
		t.Fatalf("a bad config replaced the good one: limit %d", got)
	}

	// SIGHUP: the file is fixed and reloaded at once (the watcher may see
	// it first; either way the new limit is in force).
	writeRLSConfig(t, s.config, limitConfig(700))
	if err := s.proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the limit of the fixed config", func() bool { return s.currentLimit(t) == 700 })
	cancel()
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d of %d calls failed during the reloads", n, calls.Load())
	}
	if !strings.Contains(s.proc.Log(), "rate limit config reloaded") {
		t.Fatalf("no reload logged:\n%s", s.proc.Log())
	}
}

// With TLS on, the gRPC port speaks it with the client port's settings:
// a client certificate from the CA is required (--tls-auth-clients yes).
func TestRLSOverTLS(t *testing.T) {
	tlsSet := newTLSSetup(t)
	dir := t.TempDir()
	writeRLSConfig(t, dir, limitConfig(10))
	_, ports := startServerOnPorts(t, false, 2, func(ports []string) []string {
		return append(tlsSet.args(ports[0], "yes"), "--grpc-port", ports[1], "--rls-config", dir)
	})
	addr := "127.0.0.1:" + ports[1]
	clientCert, err := tls.LoadX509KeyPair(tlsSet.clientCert, tlsSet.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(certs []tls.Certificate) *grpc.ClientConn {
		conf := &tls.Config{RootCAs: tlsSet.ca.Pool(), Certificates: certs, MinVersion: tls.VersionTLS12}
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(conf)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	rl := pb.NewRateLimitServiceClient(dial([]tls.Certificate{clientCert}))
	resp, err := rl.ShouldRateLimit(ctx(t), &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{descriptor("user", "ada")}})
	if err != nil || resp.Statuses[0].LimitRemaining != 9 {
		t.Fatalf("with a client certificate: %v %v", resp, err)
	}
	if _, err := healthpb.NewHealthClient(dial(nil)).Check(ctx(t), &healthpb.HealthCheckRequest{}); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

// A three-node cluster serves the rate limit service on every node; with
// a node killed in the middle, the others keep answering (after the
// failover) and never allow more than the limit.
func TestRLSClusterNodeKilled(t *testing.T) {
	const limit = 300
	tc := newCluster(t, 3)
	dir := t.TempDir()
	writeRLSConfig(t, dir, map[string]string{"api.yaml": fmt.Sprintf(
		"domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: %d}\n", limit)})
	ports := rlproc.Ports(t, len(tc.Nodes))
	for i, n := range tc.Nodes {
		n.Config.Args = append(n.Config.Args, "--grpc-port", strconv.Itoa(ports[i]), "--rls-config", dir)
	}
	tc.Launch(t)
	for i := range tc.Nodes { // every node's clock at the start of an hour: the window cannot roll
		setClock(t, tc.client(i), dayStart)
	}
	clients := make([]*rlsServer, len(tc.Nodes))
	for i := range tc.Nodes {
		clients[i] = dialRLS(t, "127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	// Descriptors on every shard, so the killed node leads some of them.
	users := []string{"ada", "bob", "cy", "dee", "eve", "fay"}
	var allowed, errs [6]int
	ask := func(node int) {
		for u, name := range users {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := clients[node].rl.ShouldRateLimit(c, &pb.RateLimitRequest{Domain: "api",
				Descriptors: []*rlpb.RateLimitDescriptor{descriptor("user", name)}})
			cancel()
			switch {
			case err != nil:
				errs[u]++
			case resp.OverallCode == pb.RateLimitResponse_OK:
				allowed[u]++
			}
		}
	}
	for round := range 200 {
		ask(round % 3)
	}
	tc.kill(0)
	for round := range 400 {
		ask(1 + round%2)
	}
	for u, name := range users {
		if allowed[u] > limit {
			t.Errorf("%s: %d allowed of a limit of %d", name, allowed[u], limit)
		}
		// A call that failed while leadership moved may have been counted
		// without its answer arriving; no other can be missing.
		if allowed[u] < limit-errs[u] {
			t.Errorf("%s: only %d allowed, %d failed calls, of a limit of %d", name, allowed[u], errs[u], limit)
		}
	}
	if st := clients[1].ask(t, "api", 0, descriptor("user", "ada")).Statuses[0]; st.Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("after the failover: %v", st)
	}
	t.Logf("allowed %v, failed calls %v", allowed, errs)
}
