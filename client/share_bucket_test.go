package client

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

const nsMs = int64(1_000_000) // ns in a ms

// A bucket refills exactly, keeps its tokens across grants up to the new
// depth, fills only when told, and admits nothing from its expiry on.
func TestBucket(t *testing.T) {
	type step struct {
		at     int64 // ms
		op     string
		n      int64
		want   bool  // take's result
		tokens int64 // after the step
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a first grant fills, the rate refills", []step{
			{0, "grant 1000/1000ms depth 100 until 5000 fill", 0, false, 100},
			{0, "take", 100, true, 0},
			{0, "take", 1, false, 0},
			{1, "take", 1, true, 0},    // 1 unit a ms
			{10, "take", 10, false, 9}, // 9 accrued
			{10, "take", 9, true, 0},
			{500, "take", 0, true, 100}, // full at 100
		}},
		{"a fraction of a unit is kept, never rounded up", []step{
			{0, "grant 3/1000ms depth 3 until 10000 fill", 0, false, 3},
			{0, "take", 3, true, 0},
			{333, "take", 1, false, 0}, // 0.999 of a unit
			{334, "take", 1, true, 0},  // 1.002
			{666, "take", 1, false, 0}, // 0.998 since
			{667, "take", 1, true, 0},  // 1.001
		}},
		{"the expiry empties the bucket and admits nothing", []step{
			{0, "grant 1000/1000ms depth 100 until 50 fill", 0, false, 100},
			{49, "take", 100, true, 0},
			{50, "take", 0, false, 0},
			{60, "take", 1, false, 0},
		}},
		{"a later grant keeps the tokens, up to its depth, and never fills", []step{
			{0, "grant 1000/1000ms depth 100 until 5000 fill", 0, false, 100},
			{0, "take", 40, true, 60},
			{0, "grant 500/1000ms depth 50 until 6000", 0, false, 50},
			{0, "grant 2000/1000ms depth 200 until 7000", 0, false, 50},
			{10, "take", 0, true, 70},
		}},
		{"a grant that comes after the expiry starts empty", []step{
			{0, "grant 1000/1000ms depth 100 until 50 fill", 0, false, 100},
			{60, "grant 1000/1000ms depth 100 until 5000", 0, false, 0},
			{60, "take", 1, false, 0},
			{65, "take", 5, true, 0},
		}},
		{"a refund is kept up to the depth", []step{
			{0, "grant 1000/1000ms depth 100 until 5000 fill", 0, false, 100},
			{0, "take", 100, true, 0},
			{0, "refund", 30, false, 30},
			{0, "refund", 300, false, 100},
		}},
		{"a rate of 0 admits only what the bucket holds", []step{
			{0, "grant 0/1000ms depth 0 until 5000 fill", 0, false, 0},
			{0, "take", 1, false, 0},
			{1000, "take", 1, false, 0},
			{1000, "take", 0, true, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bucket
			for i, s := range tc.steps {
				now := s.at * nsMs
				switch s.op {
				case "take":
					if got := b.take(now, s.n); got != s.want {
						t.Fatalf("step %d: take(%d) at %d ms = %v", i, s.n, s.at, got)
					}
				case "refund":
					b.refund(now, s.n)
				default:
					var rate, window, depth, until int64
					var fill string
					parseGrant(t, s.op, &rate, &window, &depth, &until, &fill)
					b.switchTo(now, rate, depth, window*nsMs, until*nsMs, fill == "fill")
				}
				if b.tokens != s.tokens {
					t.Fatalf("step %d (%s) at %d ms: %d tokens, want %d", i, s.op, s.at, b.tokens, s.tokens)
				}
			}
		})
	}
}

func parseGrant(t *testing.T, op string, rate, window, depth, until *int64, fill *string) {
	t.Helper()
	var n int
	var err error
	if n, err = fmt.Sscanf(op, "grant %d/%dms depth %d until %d %s", rate, window, depth, until, fill); n < 4 {
		t.Fatalf("bad step %q: %v", op, err)
	}
}

// The wait for n units is exact, rounded up, and false when the bucket
// can never hold them under its grant.
func TestBucketWait(t *testing.T) {
	b := bucket{rate: 3, depth: 3, window: 1000 * nsMs, expires: math.MaxInt64}
	for _, tc := range []struct {
		tokens int64
		frac   uint64
		n      int64
		want   int64
		ok     bool
	}{
		{0, 0, 1, 333_333_334, true}, // 1000 nsMs / 3, rounded up
		{0, uint64(999 * nsMs), 1, 333_333_334 - 333_000_000, true},
		{1, 0, 1, 0, true},
		{0, 0, 3, 1000 * nsMs, true},
		{0, 0, 4, 0, false},
	} {
		b.tokens, b.frac = tc.tokens, tc.frac
		got, ok := b.wait(tc.n)
		if got != tc.want || ok != tc.ok {
			t.Errorf("tokens %d frac %d: wait(%d) = %d, %v; want %d, %v", tc.tokens, tc.frac, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}

// Whatever the steps and grants, a bucket admits over [0, T] at most what
// its grants' rates pay for plus the depth it started with: exactness, at
// nanosecond steps and rates that do not divide the window.
func TestBucketNeverAdmitsMoreThanItsRate(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		window := (1 + rng.Int64N(2000)) * nsMs
		rate := 1 + rng.Int64N(1_000_000)
		depth := max(1, rate/(1+rng.Int64N(20)))
		var b bucket
		b.switchTo(0, rate, depth, window, math.MaxInt64, true)
		var now, admitted int64
		for range 20_000 {
			now += rng.Int64N(window / 100)
			if cost := 1 + rng.Int64N(3); b.take(now, cost) {
				admitted += cost
			}
		}
		if bound := depth + rate*now/window; admitted > bound { // rate × now < 10^6 × 4·10^11
			t.Fatalf("seed %d: %d admitted in %d ns at %d per %d ns, depth %d: bound %d", seed, admitted, now, rate, window, depth, bound)
		}
	}
}
