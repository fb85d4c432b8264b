package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The example through the client: 1,000 tokens a minute, a reply
// of 1,200 charged after it, or reserved at 100 and settled at 1,200.
func TestChargeReserveSettleAgainstRLServer(t *testing.T) {
	rule := TokenBucket{Capacity: 1000, RefillTokens: 1000, RefillEvery: time.Minute}
	debt := dec(false, 1000, -200, ms(12_000), ms(72_000))
	next := dec(false, 1000, -200, ms(12_060), ms(72_000))
	eachProtocol(t, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		d, err := c.Charge(ctx, "forced", rule, 1200)
		expect(t, "Charge 1200", d, err, debt)
		d, err = c.Allow(ctx, "forced", rule)
		expect(t, "the next request", d, err, next)

		r, err := c.Reserve(ctx, "reserved", rule, 100, 5*time.Minute)
		if err != nil || !r.Allowed || r.Remaining != 900 || !strings.HasSuffix(r.ID, ":reserved") {
			t.Fatalf("Reserve: %+v %v", r, err)
		}
		for range 2 {
			d, err = c.Settle(ctx, r.ID, 1200)
			expect(t, "Settle 1200", d, err, debt)
		}
		if refused, err := c.Reserve(ctx, "reserved", rule, 1, 0); err != nil || refused.Allowed || refused.ID != "" {
			t.Fatalf("a refused Reserve: %+v %v", refused, err)
		}
		shaped, err := c.Reserve(ctx, "shape", Shape{Capacity: 3, LeakTokens: 1, LeakEvery: time.Second}, 2, 0)
		if err != nil || !shaped.Allowed || shaped.ID == "" {
			t.Fatalf("Reserve of a Shape (its delay_ms before the id): %+v %v", shaped, err)
		}
		if _, err := c.Settle(ctx, r.ID+"0", 1); !errors.Is(err, ErrNoSuchReservation) {
			t.Fatalf("an unknown id: %v", err)
		}
		short, _ := c.Reserve(ctx, "short", FixedWindow{Limit: 10, Window: time.Minute}, 1, time.Millisecond)
		if err := rdb.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 1).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Settle(ctx, short.ID, 1); !errors.Is(err, ErrReservationExpired) {
			t.Fatalf("after its TTL: %v", err)
		}
		if _, err := c.Charge(ctx, "t", Throttle{MaxBurst: 1, Count: 1, Period: time.Second}, 1); !errors.Is(err, ErrNotSupported) {
			t.Fatalf("Charge of a Throttle: %v", err)
		}
	})
}

// A cluster client routes RL.RESERVE by its key and RL.SETTLE by the id's
// tag, straight to the shard's leader.
func TestReserveSettleAgainstRLServerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	clients := clusterClients(t, func(node int) int { return 2 + node%2 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hourly := FixedWindow{Limit: 100, Window: time.Hour}
	for u := range 8 { // keys on every shard
		key := fmt.Sprintf("usage:%d", u)
		r, err := clients[0].Reserve(ctx, key, hourly, 10, time.Minute)
		if err != nil || !r.Allowed {
			t.Fatalf("%s: Reserve %+v %v", key, r, err)
		}
		for i := range clients {
			d, err := clients[i].Settle(ctx, r.ID, 150)
			if err != nil || d.Allowed || d.Remaining != -50 {
				t.Fatalf("%s: client %d: Settle %+v %v, want the first settlement's -50", key, i, d, err)
			}
		}
	}
}

// A route whose responses stream tokens: the middleware decides the request
// up front and, once the stream ends, charges what the handler reported;
// a response of 1,200 tokens on 1,000 a minute leaves the next request
// refused until the debt is paid off.
func TestMiddlewareChargesUsageAfterTheStream(t *testing.T) {
	s := startServer(t)
	setClock(t, s, testNow)
	c := testRedis(t, s.Addr, 3, nil)
	l := newTestLimiter(t, HTTPConfig{
		Client: c, Unavailable: FailClosed, Policy: "chat", Cost: func(*http.Request) int64 { return 0 },
		Rule:  TokenBucket{Capacity: 1000, RefillTokens: 1000, RefillEvery: time.Minute},
		Usage: UsageReported,
	})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 3 {
			fmt.Fprintf(w, "data: 400 tokens\n\n")
			w.(http.Flusher).Flush()
			AddUsage(r.Context(), 400)
		}
	})
	srv := httptest.NewServer(l.Wrap(stream))
	t.Cleanup(srv.Close)
	ask := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		req.Header.Set("X-Api-Key", "key-ada-123")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK && strings.Count(string(body), "data:") != 3 {
			t.Fatalf("the stream: %q", body)
		}
		return res
	}
	if res := ask(); res.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %d", res.StatusCode)
	}
	d, err := c.AllowN(context.Background(), "rl:chat:client:ada", TokenBucket{Capacity: 1000, RefillTokens: 1000, RefillEvery: time.Minute}, 0)
	expect(t, "the key after the stream", d, err, dec(false, 1000, -200, ms(12_000), ms(72_000)))
	res := ask()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "12" || res.Header.Get("RateLimit") != `"chat";r=0;t=12` {
		t.Fatalf("the next request: %d, Retry-After %q, RateLimit %q", res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("RateLimit"))
	}
	setClock(t, s, testNow+12_000)
	if res := ask(); res.StatusCode != http.StatusOK {
		t.Fatalf("after 12 s: %d", res.StatusCode)
	}
}

// Usage may read the response: here a trailer the handler sets, as a
// gRPC-style stream reports its count at the end; a usage of 0 charges
// nothing.
func TestMiddlewareUsageFromATrailer(t *testing.T) {
	s := startServer(t)
	setClock(t, s, testNow)
	c := testRedis(t, s.Addr, 2, nil)
	rule := FixedWindow{Limit: 100, Window: time.Minute}
	l := newTestLimiter(t, HTTPConfig{
		Client: c, Unavailable: FailClosed, Policy: "bytes", Rule: rule,
		Usage: func(_ *http.Request, res *Response) int64 {
			n, _ := strconv.ParseInt(res.Header.Get("X-Bytes"), 10, 64)
			if res.Status != http.StatusOK || n != res.Written {
				return 0
			}
			return n
		},
	})
	h := l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Bytes")
		n, _ := w.Write([]byte(strings.Repeat("x", 30)))
		w.Header().Set("X-Bytes", strconv.Itoa(n))
	}))
	for range 2 {
		postOrder(h, "key-ada-123")
	}
	d, err := c.AllowN(context.Background(), "rl:bytes:client:ada", rule, 0)
	expect(t, "two requests of 1 and 30 bytes each", d, err, dec(true, 100, 100-2*31, 0, ms(60_000)))
}
