package client

import (
	"context"
	"testing"
	"time"
)

// A leased decision costs no round trip: the clock, a map lookup, a lock
// and the bucket's arithmetic. BenchmarkAllowRoundTrip is the same decision
// asked of rlserver (--in-memory, on loopback) for comparison.
func BenchmarkLeasedAllow(b *testing.B) {
	rl, rule := leasedBenchClient(b)
	ctx := context.Background()
	for b.Loop() {
		if d, err := rl.Allow(ctx, "hot", rule); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}

// BenchmarkLeasedAllowParallel decides one key from every processor at
// once: the key's lock is shared.
func BenchmarkLeasedAllowParallel(b *testing.B) {
	rl, rule := leasedBenchClient(b)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d, err := rl.Allow(ctx, "hot", rule); err != nil || !d.Allowed {
				b.Error(d, err)
				return
			}
		}
	})
}

func BenchmarkAllowRoundTrip(b *testing.B) {
	s := startServer(b)
	rl := New(s.Client(b, 2))
	rule := SlidingWindow{Limit: 1_000_000_000_000, Window: time.Second}
	ctx := context.Background()
	for b.Loop() {
		if d, err := rl.Allow(ctx, "hot", rule); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}

// leasedBenchClient is a client holding the lease of "hot" under a limit
// no benchmark exhausts.
func leasedBenchClient(b *testing.B) (*Client, Rule) {
	s := startServer(b)
	rl := New(s.Client(b, 2), WithLeases(nil, LeaseConfig{}))
	b.Cleanup(func() { _ = rl.Close() })
	rule := SlidingWindow{Limit: 1_000_000_000_000_000, Window: time.Second}
	if _, err := rl.Allow(context.Background(), "hot", rule); err != nil {
		b.Fatal(err)
	}
	return rl, rule
}
