package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedServer answers each request with the next status of its script
// (the last one repeating), with the Retry-After given for it, and records
// the bodies it received.
type scriptedServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

type step struct {
	status     int
	retryAfter string
}

func newScriptedServer(t *testing.T, script ...step) *scriptedServer {
	s := &scriptedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		st := script[min(len(s.bodies), len(script))-1]
		s.mu.Unlock()
		if st.retryAfter != "" {
			w.Header().Set("Retry-After", st.retryAfter)
		}
		w.WriteHeader(st.status)
		io.WriteString(w, http.StatusText(st.status))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// recordedWaits replaces a RetryTransport's sleep: it records the waits and
// returns at once, so no test sleeps.
type recordedWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recordedWaits) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func newTestTransport(clock *fakeClock) (*RetryTransport, *recordedWaits) {
	rec := &recordedWaits{}
	return &RetryTransport{now: clock.Now, sleep: rec.sleep, randN: func(n int64) int64 { return n - 1 }}, rec
}

func send(t *testing.T, tr http.RoundTripper, req *http.Request) *http.Response {
	t.Helper()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestRetryHonoursRetryAfterSeconds(t *testing.T) {
	srv := newScriptedServer(t, step{429, "2"}, step{503, "7"}, step{200, ""})
	tr, rec := newTestTransport(newFakeClock())
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	if resp := send(t, tr, req); resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if srv.hits() != 3 || len(rec.waits) != 2 || rec.waits[0] != 2*time.Second || rec.waits[1] != 7*time.Second {
		t.Fatalf("%d hits, waits %v; want 3 hits after 2s and 7s", srv.hits(), rec.waits)
	}
}

func TestRetryHonoursRetryAfterDate(t *testing.T) {
	clock := newFakeClock()
	date := clock.Now().Add(30 * time.Second).Format(http.TimeFormat)
	srv := newScriptedServer(t, step{429, date}, step{200, ""})
	tr, rec := newTestTransport(clock)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	send(t, tr, req)
	if len(rec.waits) != 1 || rec.waits[0] != 30*time.Second {
		t.Fatalf("waits %v, want [30s]", rec.waits)
	}
}

func TestRetryDoesNotRetryNonIdempotentRequests(t *testing.T) {
	srv := newScriptedServer(t, step{429, "1"}, step{202, ""})
	tr, rec := newTestTransport(newFakeClock())
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"book":1}`))
	if resp := send(t, tr, req); resp.StatusCode != 429 {
		t.Fatalf("status %d, want the 429 returned as is", resp.StatusCode)
	}
	if srv.hits() != 1 || len(rec.waits) != 0 {
		t.Fatalf("%d hits, waits %v: a POST without an idempotency key was retried", srv.hits(), rec.waits)
	}
}

// A POST with an idempotency key is retried, with its body replayed whole.
func TestRetryWithIdempotencyKeyReplaysTheBody(t *testing.T) {
	for _, header := range []string{"", "X-Request-Id"} {
		srv := newScriptedServer(t, step{429, "1"}, step{503, ""}, step{202, ""})
		tr, _ := newTestTransport(newFakeClock())
		tr.IdempotencyKeyHeader = header
		if header == "" {
			header = "Idempotency-Key"
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", bytes.NewBufferString(`{"book":1}`))
		req.Header.Set(header, "order-8d2f")
		if resp := send(t, tr, req); resp.StatusCode != 202 {
			t.Fatalf("%s: status %d, want 202", header, resp.StatusCode)
		}
		want := []string{`{"book":1}`, `{"book":1}`, `{"book":1}`}
		if strings.Join(srv.bodies, "|") != strings.Join(want, "|") {
			t.Fatalf("%s: bodies %q, want %q", header, srv.bodies, want)
		}
	}
}

// A body that cannot be replayed (no GetBody) is sent once.
func TestRetryDoesNotRetryAnUnreplayableBody(t *testing.T) {
	srv := newScriptedServer(t, step{503, "1"}, step{200, ""})
	tr, _ := newTestTransport(newFakeClock())
	req, _ := http.NewRequest(http.MethodPut, srv.URL, io.NopCloser(strings.NewReader("x")))
	if req.GetBody != nil {
		t.Fatal("test setup: the body should not be replayable")
	}
	if resp := send(t, tr, req); resp.StatusCode != 503 || srv.hits() != 1 {
		t.Fatalf("status %d after %d hits, want 503 after 1", resp.StatusCode, srv.hits())
	}
}

func TestRetryAttemptsAreBoundedAndBackoffJittered(t *testing.T) {
	srv := newScriptedServer(t, step{503, ""})
	tr, rec := newTestTransport(newFakeClock())
	tr.MaxAttempts = 5
	tr.BaseDelay = 100 * time.Millisecond
	tr.MaxDelay = 500 * time.Millisecond
	var ceilings []time.Duration
	tr.randN = func(n int64) int64 { ceilings = append(ceilings, time.Duration(n)); return n / 2 }
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	if resp := send(t, tr, req); resp.StatusCode != 503 {
		t.Fatalf("status %d, want the last 503", resp.StatusCode)
	}
	if srv.hits() != 5 {
		t.Fatalf("%d attempts, want 5", srv.hits())
	}
	wantCeilings := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}
	if len(ceilings) != len(wantCeilings) {
		t.Fatalf("ceilings %v, want %v", ceilings, wantCeilings)
	}
	for i := range wantCeilings {
		if ceilings[i] != wantCeilings[i] || rec.waits[i] != wantCeilings[i]/2 {
			t.Fatalf("retry %d: ceiling %v wait %v; want ceiling %v", i, ceilings[i], rec.waits[i], wantCeilings[i])
		}
	}
}

// A Retry-After longer than MaxRetryAfter, or than the request's deadline
// leaves, is the caller's to handle: the response comes back at once.
func TestRetryReturnsLongWaitsToTheCaller(t *testing.T) {
	srv := newScriptedServer(t, step{429, "3600"}, step{200, ""})
	tr, rec := newTestTransport(newFakeClock())
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	if resp := send(t, tr, req); resp.StatusCode != 429 || srv.hits() != 1 || len(rec.waits) != 0 {
		t.Fatalf("status %d, %d hits, waits %v; want the 429 at once", resp.StatusCode, srv.hits(), rec.waits)
	}

	srv = newScriptedServer(t, step{429, "30"}, step{200, ""})
	clock := &fakeClock{t: time.Now()} // the deadline is on the real clock
	tr, rec = newTestTransport(clock)
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(10*time.Second))
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if resp := send(t, tr, req); resp.StatusCode != 429 || srv.hits() != 1 || len(rec.waits) != 0 {
		t.Fatalf("status %d, %d hits, waits %v; want the 429 at once", resp.StatusCode, srv.hits(), rec.waits)
	}
}

// Cancelling the request's context during a wait ends the wait (an hour
// long on the real timer) and the round trip, with the context's error.
func TestRetryWaitEndsWithTheContext(t *testing.T) {
	srv := newScriptedServer(t, step{429, "3600"}, step{200, ""})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &RetryTransport{MaxRetryAfter: 2 * time.Hour}
	tr.sleep = func(ctx context.Context, d time.Duration) error {
		cancel() // the caller gives up while the transport waits
		return (&RetryTransport{}).pause(ctx, d)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, context.Canceled) || srv.hits() != 1 {
		t.Fatalf("err %v after %d hits, want context.Canceled after 1", err, srv.hits())
	}
}

func TestRetryPauseReturnsAtOnceOnACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&RetryTransport{}).pause(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("pause: %v, want context.Canceled", err)
	}
}

// Network errors of idempotent requests are retried with backoff too.
func TestRetryNetworkErrors(t *testing.T) {
	var calls int
	errNet := errors.New("connection reset by peer")
	tr, rec := newTestTransport(newFakeClock())
	tr.Base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls++
		if calls < 3 {
			return nil, errNet
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 || calls != 3 || len(rec.waits) != 2 {
		t.Fatalf("resp %v err %v after %d calls, waits %v", resp, err, calls, rec.waits)
	}

	calls = 0
	req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, errNet) || calls != 1 {
		t.Fatalf("POST: err %v after %d calls, want the error after 1", err, calls)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
