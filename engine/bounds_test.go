package engine

import (
	"math"
	"testing"
)

// checkSane fails on a decision no client could act on.
func checkSane(t *testing.T, what string, d Decision) {
	t.Helper()
	if d.Remaining < 0 || d.ResetAfter < 0 || d.RetryAfter < -1 || (d.Allowed && d.RetryAfter != 0) ||
		(!d.Allowed && d.RetryAfter == 0) || d.ResetAfter == math.MaxInt64 || d.RetryAfter == math.MaxInt64 {
		t.Fatalf("%s: insane decision %+v", what, d)
	}
}

// At the extremes of every bound the arithmetic stays exact and in range.
func TestExtremeParameters(t *testing.T) {
	counts := []int64{1, 2, 999_999_937, MaxCount}
	durations := []int64{1, 3, 86_400_000, MaxDuration}
	costs := func(limit int64) []int64 { return []int64{0, 1, limit / 2, limit, limit + 1} }
	const now = 4_000_000_000_000
	for _, limit := range counts {
		for _, window := range durations {
			s := NewShard()
			for _, cost := range costs(limit) {
				for _, op := range []Op{OpSliding, OpFixed} {
					for _, at := range []int64{now, now + window - 1, now + window, now + 2*window + 1} {
						checkSane(t, "window", decision(t, s, at, op, op.kind().String(), limit, window, 0, cost))
					}
				}
			}
			for _, rate := range counts {
				b := Bucket{Capacity: limit, Rate: rate, Period: window}
				if b.DrainTime() > MaxDuration {
					continue // commands refuses these
				}
				s := NewShard()
				for _, cost := range costs(limit) {
					for _, at := range []int64{now, now + 1, now + window} {
						checkSane(t, "bucket", decision(t, s, at, OpToken, "t", limit, rate, window, cost))
					}
				}
			}
		}
	}
}

func FuzzShardApply(f *testing.F) {
	f.Add(uint8(OpSliding), int64(100), int64(60_000), int64(0), int64(1), int64(59_900), uint16(3))
	f.Add(uint8(OpThrottle), int64(4), int64(1), int64(1), int64(6), int64(1_700_000_000_000), uint16(7))
	f.Add(uint8(OpToken), int64(10), int64(3), int64(1000), int64(11), int64(0), uint16(9))
	f.Fuzz(func(t *testing.T, op uint8, a0, a1, a2, cost, now int64, gap uint16) {
		c := Command{Op: Op(op % uint8(OpUsage+1)), Key: []byte("k"), Args: [4]int64{a0, a1, a2, cost}}
		if c.Op == OpScan || c.Op == OpSweep || c.Op == OpSetClock {
			c.Args = [4]int64{abs(a0) % 1000, abs(a1)%1000 + 1}
		}
		if !c.Valid() {
			return // commands and the log decoder never let it through
		}
		now = abs(now) % 4_000_000_000_000
		s := NewShard()
		out := make([]Result, 1)
		for i := range 5 {
			s.Apply(now+int64(i)*int64(gap), []Command{c}, out)
			if out[0].Type == ResDecision {
				checkSane(t, "fuzz", out[0].Decision)
			}
		}
	})
}

func abs(v int64) int64 {
	if v < 0 {
		if v == math.MinInt64 {
			return math.MaxInt64
		}
		return -v
	}
	return v
}
