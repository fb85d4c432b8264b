package engine

import (
	"math"
	"testing"
)

// checkSane fails on a decision no client could act on.
func checkSane(t *testing.T, what string, d Decision) {
	t.Helper()
	// Remaining goes below zero by a debt (FORCE, a lowered limit), which
	// is at most the two windows of a sliding counter, each of MaxCount.
	if d.Remaining > d.Limit || d.Remaining < d.Limit-2*MaxCount || d.ResetAfter < 0 || d.RetryAfter < -1 || (d.Allowed && d.RetryAfter != 0) ||
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
				b := bucket{Capacity: limit, Rate: rate, Period: window}
				if b.drainTime() > MaxDuration {
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
	f.Add(uint8(OpSliding), int64(100), int64(60_000), int64(0), int64(1), int64(59_900), uint16(3), uint16(0), []byte(nil))
	f.Add(uint8(OpThrottle), int64(4), int64(1), int64(1), int64(6), int64(1_700_000_000_000), uint16(7), uint16(0), []byte(nil))
	f.Add(uint8(OpToken), int64(10), int64(3), int64(1000), int64(11), int64(0), uint16(9), uint16(FlagPartial), []byte(nil))
	f.Add(uint8(OpShape), int64(3), int64(1), int64(1000), int64(-2), int64(5), uint16(500), uint16(0), []byte(nil))
	f.Add(uint8(OpSet), int64(1000), int64(ExpiryRelative), int64(0), int64(0), int64(5), uint16(400), uint16(FlagGet|FlagNX), []byte("12"))
	f.Add(uint8(OpAll), int64(2), int64(0), int64(0), int64(0), int64(5), uint16(1), uint16(0), []byte(nil))
	f.Add(uint8(OpPolicySet), int64(2), int64(1000), int64(0), int64(OpSliding), int64(5), uint16(1), uint16(FlagShadow), []byte("p"))
	f.Add(uint8(OpHSet), int64(0), int64(0), int64(0), int64(0), int64(5), uint16(1), uint16(FlagStatus), Pack([][]byte{[]byte("f"), []byte("1")}))
	f.Add(uint8(OpHIncrByFloat), int64(0), int64(0), int64(0), int64(0), int64(5), uint16(1), uint16(0), Pack([][]byte{[]byte("f"), []byte("1.5")}))
	f.Add(uint8(OpPush), int64(0), int64(0), int64(0), int64(0), int64(5), uint16(1), uint16(FlagRight), Pack([][]byte{[]byte("a"), []byte("b")}))
	f.Add(uint8(OpPop), int64(2), int64(1), int64(0), int64(0), int64(5), uint16(1), uint16(0), []byte(nil))
	f.Add(uint8(OpLTrim), int64(0), int64(-2), int64(0), int64(0), int64(5), uint16(1), uint16(0), []byte(nil))
	f.Add(uint8(OpRename), int64(0), int64(0), int64(0), int64(0), int64(5), uint16(1), uint16(FlagNX), []byte("a"))
	f.Add(uint8(OpScriptLoad), int64(0), int64(0), int64(0), int64(0), int64(5), uint16(1), uint16(0), []byte("return 1"))
	f.Fuzz(func(t *testing.T, op uint8, a0, a1, a2, cost, now int64, gap, flags uint16, value []byte) {
		c := Command{Op: Op(op % uint8(opCount)), Flags: Flags(flags), Key: []byte("k"), Value: value, Args: [4]int64{a0, a1, a2, cost}}
		if c.Op == OpScan || c.Op == OpSweep || c.Op == OpSetClock {
			c.Args = [4]int64{abs(a0) % 1000, abs(a1)%1000 + 1}
		}
		if !c.Valid() {
			return // commands and the log decoder never let it through
		}
		// The command alone, then in front of a check, a policy and an
		// RL.ALL group of two limits on other keys, as a log entry could
		// hold them in one batch.
		batch := []Command{c,
			{Op: OpCheck, Key: []byte("k"), Value: []byte("p"), Args: [4]int64{3: 1}},
			{Op: OpAll, Key: []byte("a"), Args: [4]int64{2}},
			{Op: OpSliding, Key: []byte("a"), Args: [4]int64{3, 1000, 0, 1}},
			{Op: OpToken, Key: []byte("b"), Args: [4]int64{3, 1, 1000, 1}},
		}
		now = abs(now) % 4_000_000_000_000
		s := NewShard()
		out := make([]Result, len(batch))
		for i := range 5 {
			s.Apply(now+int64(i)*int64(gap), batch[:1+4*(i%2)], out)
			for _, r := range out {
				if r.Type == ResDecision {
					checkSane(t, "fuzz", r.Decision)
				}
			}
		}
		checkCounters(t, s)
		if _, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat); err != nil {
			t.Fatalf("snapshot of a fuzzed shard: %v", err)
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
