package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// The seed article's /orders: API keys mapped to client ids, 5 orders a
// minute.
var seedAPIKeys = map[string]string{"key-ada-123": "client:ada"}

func seedKey() KeyFunc {
	return APIKey("X-Api-Key", func(k string) (string, bool) { id, ok := seedAPIKeys[k]; return id, ok })
}

var seedRule = SlidingWindow{Limit: 5, Window: time.Minute}

// accepted is the /orders handler: 202 and a count of calls.
type accepted struct{ calls atomic.Int64 }

func (a *accepted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	w.WriteHeader(http.StatusAccepted)
}

// quietLogger drops the limiter's logs: the tests provoke its errors.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// testRedis is a go-redis client of addr as a limiter should have one:
// context deadlines honoured, no retries, short timeouts; dials counts
// every connection it opens.
func testRedis(t *testing.T, addr string, protocol int, dials *atomic.Int64) *Client {
	t.Helper()
	opt := &redis.Options{
		Addr: addr, Protocol: protocol, MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		DialerRetries: 1, // a refused connection fails at once; the breaker retries
	}
	if dials != nil {
		opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return New(rdb)
}

func newTestLimiter(t *testing.T, cfg HTTPConfig) *HTTPLimiter {
	t.Helper()
	if cfg.Policy == "" {
		cfg.Policy = "orders"
	}
	if cfg.Rule == nil {
		cfg.Rule = seedRule
	}
	if cfg.Key == nil {
		cfg.Key = seedKey()
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger
	}
	l, err := NewHTTPLimiter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// postOrder sends POST /orders with apiKey through h.
func postOrder(h http.Handler, apiKey string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"book":"1984"}`))
	if apiKey != "" {
		req.Header.Set("X-Api-Key", apiKey)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// setClock fixes rlserver's clock (DEBUG CLOCK SET), so decisions are exact.
func setClock(t *testing.T, s *rlproc.Process, unixMs int64) {
	t.Helper()
	if err := s.Client(t, 2, contextTimeouts).Do(context.Background(), "DEBUG", "CLOCK", "SET", unixMs).Err(); err != nil {
		t.Fatal(err)
	}
}

func decodeProblem(t *testing.T, rec *httptest.ResponseRecorder) Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body %q: %v", rec.Body, err)
	}
	return p
}

// Five orders a minute, as in the seed article: five 202s carrying the
// RateLimit fields, then a 429 with Retry-After, the fields and a problem
// body. Over RESP2 and RESP3 alike.
func TestMiddlewareAllowsThenRefuses(t *testing.T) {
	s := startServer(t)
	for _, protocol := range []int{2, 3} {
		setClock(t, s, 1700000040000) // the start of a one-minute window
		next := &accepted{}
		l := newTestLimiter(t, HTTPConfig{
			Client: testRedis(t, s.Addr, protocol, nil), Unavailable: FailClosed,
			KeyPrefix: "rl:orders:resp" + strconv.Itoa(protocol) + ":",
		})
		h := l.Wrap(next)
		for i := range 5 {
			rec := postOrder(h, "key-ada-123")
			if rec.Code != http.StatusAccepted {
				t.Fatalf("RESP%d order %d: status %d %s", protocol, i+1, rec.Code, rec.Body)
			}
			if got, want := rec.Header().Get("RateLimit-Policy"), `"orders";q=5;w=60`; got != want {
				t.Fatalf("RateLimit-Policy %q, want %q", got, want)
			}
			if got, want := rec.Header().Get("RateLimit"), `"orders";r=`+strconv.Itoa(4-i); got != want {
				t.Fatalf("order %d: RateLimit %q, want %q", i+1, got, want)
			}
		}
		rec := postOrder(h, "key-ada-123")
		// 5 in this window: the sixth fits once the window has moved on and
		// the previous one weighs 4/5, 72 s from the window's start.
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "72" ||
			rec.Header().Get("RateLimit") != `"orders";r=0;t=72` ||
			rec.Header().Get("RateLimit-Policy") != `"orders";q=5;w=60` {
			t.Fatalf("RESP%d sixth order: %d %v", protocol, rec.Code, rec.Header())
		}
		p := decodeProblem(t, rec)
		if p.Type != problemQuotaExceeded || p.Status != 429 || p.Detail != "Retry after 72 s." ||
			len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "orders" {
			t.Fatalf("problem %+v", p)
		}
		if next.calls.Load() != 5 {
			t.Fatalf("handler called %d times, want 5", next.calls.Load())
		}
		if l.BreakerState() != BreakerClosed {
			t.Fatalf("breaker %v", l.BreakerState())
		}
	}
}

// A cost above the whole quota can never be allowed: 429 without
// Retry-After, since waiting would not help.
func TestMiddlewareCostAboveQuota(t *testing.T) {
	s := startServer(t)
	l := newTestLimiter(t, HTTPConfig{
		Client: testRedis(t, s.Addr, 3, nil), Unavailable: FailClosed,
		Cost: func(*http.Request) int64 { return 6 },
	})
	rec := postOrder(l.Wrap(&accepted{}), "key-ada-123")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "" || rec.Header().Get("RateLimit") != `"orders";r=5` {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
	if p := decodeProblem(t, rec); !strings.Contains(p.Detail, "never") {
		t.Fatalf("detail %q", p.Detail)
	}
}

// An unknown or missing API key is answered 401 without asking rlserver
// (the server here is a closed port: asking it would open the breaker).
func TestMiddlewareKeyFailure(t *testing.T) {
	var dials atomic.Int64
	next := &accepted{}
	l := newTestLimiter(t, HTTPConfig{
		Client:      testRedis(t, rlproc.ClosedAddr(t), 3, &dials),
		Unavailable: FailClosed,
		Breaker:     NewBreaker(BreakerConfig{Failures: 1}),
	})
	h := l.Wrap(next)
	for _, key := range []string{"", "key-made-up"} {
		rec := postOrder(h, key)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("key %q: status %d", key, rec.Code)
		}
		if p := decodeProblem(t, rec); p.Status != 401 || strings.Contains(p.Detail, key) && key != "" {
			t.Fatalf("key %q: problem %+v", key, p)
		}
	}
	if dials.Load() != 0 || next.calls.Load() != 0 || l.BreakerState() != BreakerClosed {
		t.Fatalf("dials %d, handler calls %d, breaker %v", dials.Load(), next.calls.Load(), l.BreakerState())
	}

	// The response is the application's to choose.
	var got error
	l = newTestLimiter(t, HTTPConfig{
		Client: testRedis(t, rlproc.ClosedAddr(t), 3, nil), Unavailable: FailClosed,
		OnKeyError: func(w http.ResponseWriter, r *http.Request, err error) {
			got = err
			w.WriteHeader(http.StatusForbidden)
		},
	})
	if rec := postOrder(l.Wrap(next), "nope"); rec.Code != http.StatusForbidden || !errors.Is(got, ErrUnknownAPIKey) {
		t.Fatalf("custom OnKeyError: %d, err %v", rec.Code, got)
	}
}

// With rlserver down (a closed port) each fail mode does what it says.
func TestMiddlewareFailModesWhenServerIsDown(t *testing.T) {
	down := rlproc.ClosedAddr(t)

	next := &accepted{}
	open := newTestLimiter(t, HTTPConfig{Client: testRedis(t, down, 3, nil), Unavailable: FailOpen})
	rec := postOrder(open.Wrap(next), "key-ada-123")
	if rec.Code != http.StatusAccepted || rec.Header().Get("RateLimit") != "" || next.calls.Load() != 1 {
		t.Fatalf("fail open: %d %v", rec.Code, rec.Header())
	}

	closed := newTestLimiter(t, HTTPConfig{Client: testRedis(t, down, 3, nil), Unavailable: FailClosed})
	rec = postOrder(closed.Wrap(next), "key-ada-123")
	if rec.Code != http.StatusServiceUnavailable || next.calls.Load() != 1 {
		t.Fatalf("fail closed: %d", rec.Code)
	}
	if p := decodeProblem(t, rec); p.Status != 503 {
		t.Fatalf("fail closed: %+v", p)
	}

	// The local fallback: 5 a minute over one instance, spaced 12 s apart.
	local := newTestLimiter(t, HTTPConfig{
		Client: testRedis(t, down, 3, nil), Unavailable: FailLocal, Fallback: LocalFallback{Instances: 1},
	})
	local.local.now = newFakeClock().Now
	h := local.Wrap(next)
	for i := range 5 {
		if rec := postOrder(h, "key-ada-123"); rec.Code != http.StatusAccepted || rec.Header().Get("RateLimit") != `"orders";r=`+strconv.Itoa(4-i) {
			t.Fatalf("fallback order %d: %d %v", i+1, rec.Code, rec.Header())
		}
	}
	rec = postOrder(h, "key-ada-123")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "12" || rec.Header().Get("RateLimit") != `"orders";r=0;t=12` ||
		rec.Header().Get("RateLimit-Policy") != `"orders";q=5;w=60` {
		t.Fatalf("fallback sixth order: %d %v", rec.Code, rec.Header())
	}
	// Three instances share the 5: each admits 1 on its own.
	three := newTestLimiter(t, HTTPConfig{
		Client: testRedis(t, down, 3, nil), Unavailable: FailLocal, Fallback: LocalFallback{Instances: 3},
	})
	h = three.Wrap(next)
	if a, b := postOrder(h, "key-ada-123").Code, postOrder(h, "key-ada-123").Code; a != 202 || b != 429 {
		t.Fatalf("fallback over 3 instances: %d then %d, want 202 then 429", a, b)
	}
}

// A dead server costs one failure, not one per request: the breaker opens,
// requests stop dialling, and after OpenFor one probe dials again.
func TestMiddlewareBreakerStopsAskingADeadServer(t *testing.T) {
	var dials atomic.Int64
	clock := newFakeClock()
	next := &accepted{}
	l := newTestLimiter(t, HTTPConfig{
		Client:      testRedis(t, rlproc.ClosedAddr(t), 3, &dials),
		Unavailable: FailClosed,
		Breaker:     newBreakerWithClock(BreakerConfig{Failures: 1, OpenFor: 5 * time.Second}, clock.Now),
	})
	h := l.Wrap(next)
	if rec := postOrder(h, "key-ada-123"); rec.Code != 503 || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("first request: %d %v", rec.Code, rec.Header())
	}
	if l.BreakerState() != BreakerOpen {
		t.Fatalf("breaker %v after a refused connection, want open", l.BreakerState())
	}
	asked := dials.Load()
	clock.Advance(time.Second)
	for range 10 {
		rec := postOrder(h, "key-ada-123")
		// Fail closed while open says when the breaker will try again.
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "4" {
			t.Fatalf("while open: %d %v", rec.Code, rec.Header())
		}
	}
	if dials.Load() != asked {
		t.Fatalf("%d dials while open, want none", dials.Load()-asked)
	}
	clock.Advance(4 * time.Second)
	postOrder(h, "key-ada-123")
	if dials.Load() == asked || l.BreakerState() != BreakerOpen {
		t.Fatalf("probe: %d dials, breaker %v; want a dial and open again", dials.Load()-asked, l.BreakerState())
	}
}

// A server that accepts connections and never answers costs the timeout,
// once: the breaker then answers without waiting.
func TestMiddlewareTimeoutOnASilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and hold every connection, answering nothing
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	next := &accepted{}
	l := newTestLimiter(t, HTTPConfig{
		Client:      testRedis(t, ln.Addr().String(), 3, nil),
		Unavailable: FailOpen,
		Timeout:     50 * time.Millisecond,
		Breaker:     NewBreaker(BreakerConfig{Failures: 1, OpenFor: time.Hour}),
	})
	h := l.Wrap(next)
	start := time.Now()
	if rec := postOrder(h, "key-ada-123"); rec.Code != 202 {
		t.Fatalf("fail open: %d", rec.Code)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond || waited > 900*time.Millisecond {
		t.Fatalf("first request took %v, want the 50 ms timeout (go-redis's own is 1 s)", waited)
	}
	if l.BreakerState() != BreakerOpen {
		t.Fatalf("breaker %v, want open", l.BreakerState())
	}
	for range 100 {
		postOrder(h, "key-ada-123")
	}
	if next.calls.Load() != 101 {
		t.Fatalf("handler calls %d, want 101", next.calls.Load())
	}
}

// An error reply (a key another algorithm owns) proves the server is up: the
// fail mode answers, the breaker stays closed.
func TestMiddlewareErrorReplyDoesNotOpenTheBreaker(t *testing.T) {
	s := startServer(t)
	c := testRedis(t, s.Addr, 3, nil)
	if _, err := c.Allow(context.Background(), "rl:orders:client:ada", FixedWindow{5, time.Minute}); err != nil {
		t.Fatal(err)
	}
	l := newTestLimiter(t, HTTPConfig{Client: c, Unavailable: FailClosed, Breaker: NewBreaker(BreakerConfig{Failures: 1})})
	if rec := postOrder(l.Wrap(&accepted{}), "key-ada-123"); rec.Code != 503 {
		t.Fatalf("WRONGTYPE: status %d", rec.Code)
	}
	if l.BreakerState() != BreakerClosed {
		t.Fatalf("breaker %v after an error reply, want closed", l.BreakerState())
	}
}

// A caller that went away gets nothing written and teaches the breaker
// nothing.
func TestMiddlewareCallerGone(t *testing.T) {
	next := &accepted{}
	l := newTestLimiter(t, HTTPConfig{
		Client: testRedis(t, rlproc.ClosedAddr(t), 3, nil), Unavailable: FailOpen,
		Breaker: NewBreaker(BreakerConfig{Failures: 1}),
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, "/orders", nil).WithContext(ctx)
	req.Header.Set("X-Api-Key", "key-ada-123")
	rec := httptest.NewRecorder()
	l.Wrap(next).ServeHTTP(rec, req)
	if next.calls.Load() != 0 || rec.Body.Len() != 0 || l.BreakerState() != BreakerClosed {
		t.Fatalf("handler calls %d, body %q, breaker %v", next.calls.Load(), rec.Body, l.BreakerState())
	}
}

func TestHTTPConfigValidation(t *testing.T) {
	c := New(redis.NewClient(&redis.Options{Addr: rlproc.ClosedAddr(t)}))
	good := HTTPConfig{Client: c, Policy: "orders", Rule: seedRule, Key: seedKey(), Unavailable: FailOpen}
	if _, err := NewHTTPLimiter(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, mutate := range map[string]func(*HTTPConfig){
		"no client":             func(c *HTTPConfig) { c.Client = nil },
		"no rule":               func(c *HTTPConfig) { c.Rule = nil },
		"no key":                func(c *HTTPConfig) { c.Key = nil },
		"no fail mode":          func(c *HTTPConfig) { c.Unavailable = 0 },
		"local without sizing":  func(c *HTTPConfig) { c.Unavailable = FailLocal },
		"policy name":           func(c *HTTPConfig) { c.Policy = "sipari\u015f" },
		"empty policy":          func(c *HTTPConfig) { c.Policy = "" },
		"zero quota":            func(c *HTTPConfig) { c.Rule = SlidingWindow{0, time.Minute} },
		"negative timeout":      func(c *HTTPConfig) { c.Timeout = -time.Second },
		"unknown fail mode (9)": func(c *HTTPConfig) { c.Unavailable = 9 },
	} {
		cfg := good
		mutate(&cfg)
		if _, err := NewHTTPLimiter(cfg); !errors.Is(err, errConfig) {
			t.Errorf("%s: err %v, want a configuration error", name, err)
		}
	}
}
