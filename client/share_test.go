package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// leaseHarness is a Client whose leases run on a fake clock against a real
// rlserver, their renewals driven by the test (step) rather than by their
// goroutines, so that every run takes the same path.
type leaseHarness struct {
	t     *testing.T
	c     *Client
	l     *leaseTable
	clock *fakeClock
}

func newLeaseHarness(t *testing.T, rdb redis.UniversalClient, clock *fakeClock, cfg LeaseConfig) *leaseHarness {
	t.Helper()
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := New(rdb)
	c.leases = newLeaseTable(nil, cfg, c.do, clock.Now)
	c.leases.start = func(*leased) {}
	t.Cleanup(func() { _ = c.Close() })
	return &leaseHarness{t: t, c: c, l: c.leases, clock: clock}
}

// lease returns key's lease, making it as a decision of rule would.
func (h *leaseHarness) lease(key string, rule Rule) *leased {
	h.t.Helper()
	limit, windowMs, _ := leasedRule(rule)
	e, err := h.l.entry(key, limit, windowMs)
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

// step does for every lease what its goroutine would do now, and reports
// how many it renewed.
func (h *leaseHarness) step() (renewed int) {
	h.l.entries.Range(func(_, v any) bool {
		e := v.(*leased)
		switch act, _ := e.plan(h.l.now(), h.l); act {
		case planRenew:
			h.l.renew(e)
			renewed++
		case planForget:
			h.l.forget(e)
		}
		return true
	})
	return renewed
}

func (h *leaseHarness) grant(key string) Grant {
	h.t.Helper()
	g, ok := h.c.Grant(key)
	if !ok {
		h.t.Fatalf("no grant for %s", key)
	}
	return g
}

func (h *leaseHarness) allow(key string, rule Rule, cost int64) Decision {
	h.t.Helper()
	d, err := h.c.AllowN(context.Background(), key, rule, cost)
	if err != nil {
		h.t.Fatalf("AllowN(%s, %d): %v", key, cost, err)
	}
	return d
}

// shareInfo reads RL.INFO's fields of a share key.
func shareInfo(t *testing.T, rdb redis.UniversalClient, key string) map[string]int64 {
	t.Helper()
	info, err := New(rdb).Info(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return info.Fields
}

// A leased key is decided from the client's bucket: its first grant fills
// it, the rate refills it, and RL.INFO shows the one holder's commitment.
func TestLeaseDecidesFromItsBucket(t *testing.T) {
	s := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := s.Client(t, proto)
			h := newLeaseHarness(t, rdb, newFakeClock(), LeaseConfig{})
			key, rule := fmt.Sprintf("hot%d", proto), SlidingWindow{Limit: 1000, Window: time.Second}
			h.l.renew(h.lease(key, rule))
			g := h.grant(key)
			if g.Rate != 1000 || g.Burst != 100 || g.Tokens != 100 || g.Holders != 1 || g.FairShare != 1000 || g.Seq <= 0 ||
				g.Window != time.Second || !g.Expires.Equal(h.clock.Now().Add(10*time.Second)) {
				t.Fatalf("first grant: %+v", g)
			}
			for i := range int64(100) {
				if d := h.allow(key, rule, 1); d != dec(true, 1000, 99-i, 0, ms(i+1)) {
					t.Fatalf("decision %d: %+v", i, d)
				}
			}
			if d := h.allow(key, rule, 1); d != dec(false, 1000, 0, ms(1), ms(100)) {
				t.Fatalf("the bucket empty: %+v", d)
			}
			h.clock.Advance(5 * time.Millisecond)
			if d := h.allow(key, rule, 5); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("5 ms later, 5 units: %+v", d)
			}
			for cost, want := range map[int64]time.Duration{1001: Never, 101: time.Second, 2: ms(2)} {
				if d := h.allow(key, rule, cost); d.Allowed || d.RetryAfter != want {
					t.Errorf("cost %d: %+v, want RetryAfter %v", cost, d, want)
				}
			}
			if d := h.allow(key, rule, -10); !d.Allowed || d.Remaining != 10 {
				t.Fatalf("refund of 10: %+v", d)
			}
			f := shareInfo(t, rdb, key)
			if f["holders"] != 1 || f["committed"] != 1000 || f["limit"] != 1000 || f["window_ms"] != 1000 {
				t.Fatalf("RL.INFO: %v", f)
			}
		})
	}
}

// Two clients demanding more than the limit converge to half each, the
// rates they use never adding up to more than the limit, and together
// admit what the bound allows and no less than 95% of the limit once both
// hold their share.
func TestLeasesConvergeToFairShares(t *testing.T) {
	s := startServer(t)
	rdb := s.Client(t, 3)
	clock := newFakeClock()
	rule := SlidingWindow{Limit: 1000, Window: time.Second}
	var hs [2]*leaseHarness
	for i := range hs {
		hs[i] = newLeaseHarness(t, rdb, clock, LeaseConfig{Holder: fmt.Sprintf("holder%d", i)})
		hs[i].l.renew(hs[i].lease("global", rule))
	}
	if a, b := hs[0].grant("global"), hs[1].grant("global"); a.Rate != 1000 || b.Rate != 0 || b.FairShare != 500 {
		t.Fatalf("first grants: %+v and %+v", a, b)
	}
	const stepMs, steps = 10, 600 // 6 s
	admitted := make([]int64, steps)
	for step := range steps {
		clock.Advance(stepMs * time.Millisecond)
		var rates int64
		for _, h := range hs {
			h.step()
			rates += h.grant("global").Rate
			for range 20 { // 2,000 a second each
				if h.allow("global", rule, 1).Allowed {
					admitted[step]++
				}
			}
		}
		if rates > rule.Limit {
			t.Fatalf("at %d ms: rates in use add up to %d", (step+1)*stepMs, rates)
		}
	}
	for _, h := range hs {
		if g := h.grant("global"); g.Rate != 500 || g.FairShare != 500 {
			t.Errorf("%s after 6 s: %+v", g.Holder, g)
		}
	}
	// The bound over the whole run: limit × (T + BURST) / window + H + F,
	// F the first holder's first burst (the second's came with rate 0).
	var total, last2s int64
	for i, a := range admitted {
		total += a
		if i >= steps-200 {
			last2s += a
		}
	}
	if bound := int64(1000*(steps*stepMs+100)/1000 + 2 + 100); total > bound {
		t.Errorf("%d admitted in 6 s, bound %d", total, bound)
	}
	if last2s < 1900 {
		t.Errorf("%d admitted in the last 2 s, want 95%% of 2000", last2s)
	}
}

// errUnreachable stands for rlserver out of reach: not an error reply.
var errUnreachable = errors.New("dial tcp: connection refused")

// Out of reach of rlserver, a client goes on deciding from its grant until
// the grant expires, and never after: decisions then fail with ErrNoLease,
// an outage for the FailMode. Back in reach, its next grant starts empty.
func TestLeaseDecidesUntilItsGrantExpires(t *testing.T) {
	s := startServer(t)
	h := newLeaseHarness(t, s.Client(t, 2), newFakeClock(), LeaseConfig{})
	rule := FixedWindow{Limit: 1000, Window: time.Second}
	h.l.renew(h.lease("k", rule))
	expires := h.grant("k").Expires
	do := h.l.do
	h.l.do = func(context.Context, ...any) (any, error) { return nil, errUnreachable }
	var allowed int64
	for h.clock.Now().Before(expires) {
		h.step()
		for range 2 {
			if h.allow("k", rule, 1).Allowed {
				allowed++
			}
		}
		h.clock.Advance(time.Millisecond)
	}
	if allowed != 10_000+100-1 { // 1 a ms, and the first burst; the last ms is the expiry's
		t.Errorf("%d allowed until the expiry", allowed)
	}
	_, err := h.c.Allow(context.Background(), "k", rule)
	if !errors.Is(err, ErrNoLease) || !errors.Is(err, errUnreachable) || !isOutage(err) {
		t.Fatalf("at the expiry: %v", err)
	}
	h.l.do = do
	h.clock.Advance(time.Second) // past the backoff of the last failure
	if h.step() != 1 {
		t.Fatal("no renewal once back in reach")
	}
	if d := h.allow("k", rule, 1); d.Allowed {
		t.Fatalf("the next grant's bucket started full: %+v", d)
	}
	h.clock.Advance(time.Millisecond)
	if d := h.allow("k", rule, 1); !d.Allowed {
		t.Fatalf("1 ms into the next grant: %+v", d)
	}
}

// A key decided by no one for a whole TTL is renewed no more, forgotten
// once its grant has expired, and leased afresh by its next decision.
func TestIdleLeaseIsForgotten(t *testing.T) {
	s := startServer(t)
	h := newLeaseHarness(t, s.Client(t, 2), newFakeClock(), LeaseConfig{})
	rule := SlidingWindow{Limit: 10, Window: time.Second}
	h.l.renew(h.lease("idle", rule))
	h.allow("idle", rule, 1)
	var renewals int
	for range 30 {
		h.clock.Advance(time.Second)
		renewals += h.step()
	}
	if _, ok := h.c.Grant("idle"); ok {
		t.Fatal("an idle key's lease is still held after 30 s")
	}
	// Renewed each second until a whole TTL has passed since the
	// decision: at 1 s (the first to report a demand) to 9 s.
	if renewals != 9 {
		t.Errorf("%d renewals, want 9", renewals)
	}
	e := h.lease("idle", rule)
	go h.l.renew(e)
	if d := h.allow("idle", rule, 1); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("a new lease, its bucket full again (1 unit deep): %+v", d)
	}
}

// A key another algorithm owns on rlserver is an error reply, not an
// outage: the route logs it rather than open its breaker.
func TestLeaseOfAKeyOfAnotherKind(t *testing.T) {
	s := startServer(t)
	rdb := s.Client(t, 3)
	rule := SlidingWindow{Limit: 10, Window: time.Second}
	if _, err := New(rdb).Allow(context.Background(), "plain", rule); err != nil {
		t.Fatal(err)
	}
	h := newLeaseHarness(t, rdb, newFakeClock(), LeaseConfig{})
	h.l.renew(h.lease("plain", rule))
	_, err := h.c.Allow(context.Background(), "plain", rule)
	if !errors.Is(err, ErrNoLease) || isOutage(err) {
		t.Fatalf("leasing a sliding window's key: %v", err)
	}
}

// With WithLeases and their goroutines: the first decision waits for its
// grant, renewals follow in the background, Close gives the lease back and
// ends leased decisions, and keys not selected are asked of rlserver.
func TestWithLeasesAgainstRLServer(t *testing.T) {
	s := startServer(t)
	rdb := s.Client(t, 3, contextTimeouts)
	rl := New(rdb, WithLeases(func(key string) bool { return key == "hot" }, LeaseConfig{TTL: 2 * time.Second, Renew: 100 * time.Millisecond}))
	rule := SlidingWindow{Limit: 1000, Window: time.Second}
	ctx := context.Background()
	if d, err := rl.Allow(ctx, "hot", rule); err != nil || !d.Allowed {
		t.Fatalf("first decision: %+v, %v", d, err)
	}
	first := rl.leases.mustGrant(t, "hot")
	poll.Until(t, 10*time.Second, "a renewal", func() (bool, error) {
		return rl.leases.mustGrant(t, "hot").Seq != first.Seq, nil
	})
	if d, err := rl.Allow(ctx, "cold", rule); err != nil || d.Remaining != 999 {
		t.Fatalf("a key not selected: %+v, %v", d, err)
	}
	if f := shareInfo(t, rdb, "hot"); f["holders"] != 1 {
		t.Fatalf("RL.INFO before Close: %v", f)
	}
	if err := rl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rl.Allow(ctx, "hot", rule); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	info, err := rl.Info(ctx, "hot")
	if err == nil && info.Fields["holders"] != 0 {
		t.Fatalf("RL.INFO after Close: %v", info.Fields)
	}
	if err != nil && !errors.Is(err, ErrNoSuchKey) {
		t.Fatal(err)
	}
}

func (l *leaseTable) mustGrant(t *testing.T, key string) Grant {
	t.Helper()
	g, ok := l.grant(key)
	if !ok {
		t.Fatalf("no grant for %s", key)
	}
	return g
}

// With rlserver gone, leased decisions go on until the grant expires, and
// none is allowed after it.
func TestWithLeasesWhenRLServerStops(t *testing.T) {
	s := startServer(t)
	rl := New(s.Client(t, 2, contextTimeouts), WithLeases(nil, LeaseConfig{TTL: time.Second, Renew: 100 * time.Millisecond}))
	t.Cleanup(func() { _ = rl.Close() })
	rule := SlidingWindow{Limit: 1_000_000, Window: time.Second}
	ctx := context.Background()
	if _, err := rl.Allow(ctx, "k", rule); err != nil {
		t.Fatal(err)
	}
	s.Stop(t)
	var allowed int
	deadline := time.Now().Add(5 * time.Second)
	for {
		before := time.Now()
		expires := rl.leases.mustGrant(t, "k").Expires
		d, err := rl.Allow(ctx, "k", rule)
		if err != nil {
			if !errors.Is(err, ErrNoLease) || !isOutage(err) {
				t.Fatalf("after %d allowed: %v", allowed, err)
			}
			break
		}
		if d.Allowed {
			allowed++
			if !before.Before(expires) {
				t.Fatalf("allowed at %v, the grant expired at %v", before, expires)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("still deciding 5 s after rlserver stopped, with a TTL of 1 s")
		}
	}
	if allowed == 0 {
		t.Fatal("nothing allowed from the lease once rlserver had stopped")
	}
}

// Behind the HTTP middleware a leased route serves from its lease while
// rlserver is out of reach, until the grant expires; then its FailMode
// answers.
func TestLeasedRouteFallsBackAtTheExpiry(t *testing.T) {
	s := startServer(t)
	h := newLeaseHarness(t, s.Client(t, 3), newFakeClock(), LeaseConfig{})
	rule := SlidingWindow{Limit: 1000, Window: time.Second}
	lim := newTestLimiter(t, HTTPConfig{Client: h.c, Rule: rule, Unavailable: FailClosed})
	h.l.renew(h.lease("rl:orders:client:ada", rule))
	handler := lim.Wrap(&accepted{})
	if rec := postOrder(handler, "key-ada-123"); rec.Code != http.StatusAccepted || rec.Header().Get("RateLimit") != `"orders";r=99` {
		t.Fatalf("leased: %d %v", rec.Code, rec.Header())
	}
	h.l.do = func(context.Context, ...any) (any, error) { return nil, errUnreachable }
	h.clock.Advance(9999 * time.Millisecond)
	h.step()
	if rec := postOrder(handler, "key-ada-123"); rec.Code != http.StatusAccepted {
		t.Fatalf("out of reach, the grant in force: %d", rec.Code)
	}
	h.clock.Advance(time.Millisecond)
	if rec := postOrder(handler, "key-ada-123"); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("out of reach, the grant expired: %d", rec.Code)
	}
}

// A grant that runs out while its renewal is still unanswered (a slow or
// silent rlserver) fails decisions at once, rather than holding each one
// until the reply comes; the reply, when it comes, serves them again.
func TestLeaseExpiredWithItsRenewalInFlight(t *testing.T) {
	s := startServer(t)
	h := newLeaseHarness(t, s.Client(t, 2), newFakeClock(), LeaseConfig{})
	rule := SlidingWindow{Limit: 1000, Window: time.Second}
	e := h.lease("slow", rule)
	h.l.renew(e)
	do, release := h.l.do, make(chan struct{})
	h.l.do = func(ctx context.Context, args ...any) (any, error) {
		<-release
		return do(ctx, args...)
	}
	h.clock.Advance(9 * time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.l.renew(e)
	}()
	poll.Until(t, 10*time.Second, "the renewal sent", func() (bool, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.requesting, nil
	})
	h.clock.Advance(time.Second)
	_, err := h.c.Allow(context.Background(), "slow", rule)
	if !errors.Is(err, ErrNoLease) || !errors.Is(err, errRenewalLate) || !isOutage(err) {
		t.Fatalf("expired, its renewal unanswered: %v", err)
	}
	close(release)
	<-done
	h.clock.Advance(time.Millisecond)
	if d := h.allow("slow", rule, 1); !d.Allowed {
		t.Fatalf("once the reply came: %+v", d)
	}
}

// A key decided again after its renewals stopped for idleness, while its
// grant is still in force, is renewed again before that grant runs out:
// its goroutine looks again within a tenth of Renew, not at the expiry.
func TestIdleLeaseDecidedAgainIsRenewed(t *testing.T) {
	s := startServer(t)
	h := newLeaseHarness(t, s.Client(t, 2), newFakeClock(), LeaseConfig{})
	rule := SlidingWindow{Limit: 10, Window: time.Second}
	e := h.lease("back", rule)
	h.l.renew(e)
	h.allow("back", rule, 1)
	for range 11 {
		h.clock.Advance(time.Second)
		h.step()
	}
	if act, wait := e.plan(h.l.now(), h.l); act != planWait || wait > h.l.quick {
		t.Fatalf("idle, its grant in force: %v, wait %v", act, time.Duration(wait))
	}
	h.allow("back", rule, 1)
	if h.step() != 1 {
		t.Fatal("not renewed once decided again")
	}
}
