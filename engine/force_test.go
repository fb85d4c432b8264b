package engine

import (
	"errors"
	"testing"

	"github.com/rlserver/rlserver/internal/calendar"
)

// forced is a decision command with FlagForce.
func forced(op Op, key string, args ...int64) Command {
	c := cmd(op, key, args...)
	c.Flags = FlagForce
	return c
}

// debtCases are the example, through every algorithm that takes
// FORCE: a limit of 1,000 a minute (RL.QUOTA: a day), 1,200 charged after
// the fact at debtT0. The charge counts, leaves -200, and the next request
// is refused for as long as the debt implies; at that instant it is
// allowed, one millisecond earlier not.
const debtT0 = 1_700_000_040_000 // the start of a minute

var debtCases = []struct {
	name   string
	op     Op
	params []int64
	// charge is the FORCE charge's reply (its wait: until the debt is
	// paid off); next, the reply to one more unit at t0 (its wait:
	// the debt and that unit).
	charge, next Decision
}{
	{"sliding: the 1,200 weigh on the next window until 1,000 are left of them", OpSliding, []int64{1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 60_000 + 10_000, ResetAfter: 120_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 60_000 + 10_050, ResetAfter: 120_000}},
	{"fixed: refused until the window ends", OpFixed, []int64{1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 60_000, ResetAfter: 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 60_000, ResetAfter: 60_000}},
	{"log: refused until the charge leaves the window", OpLog, []int64{1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 60_000, ResetAfter: 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 60_000, ResetAfter: 60_000}},
	{"token: 200 tokens owed, refilled at one every 60 ms", OpToken, []int64{1000, 1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_000, ResetAfter: 72_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_060, ResetAfter: 72_000}},
	{"leaky: 1,200 in a bucket of 1,000, leaking one every 60 ms", OpLeaky, []int64{1000, 1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_000, ResetAfter: 72_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_060, ResetAfter: 72_000}},
	{"gcra: the theoretical arrival time 200 intervals past the burst", OpGCRA, []int64{999, 1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_000, ResetAfter: 72_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_060, ResetAfter: 72_000}},
	{"shape: 1,200 queued in a queue of 1,000", OpShape, []int64{1000, 1000, 60_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_000, ResetAfter: 72_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 12_060, ResetAfter: 72_000}},
	{"quota: 1,000 a day, refused until the day ends, 6,360 s after t0", OpQuota, []int64{1000, int64(calendar.Daily), 0},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 6_360_000, ResetAfter: 6_360_000},
		Decision{Limit: 1000, Remaining: -200, RetryAfter: 6_360_000, ResetAfter: 6_360_000}},
}

// checkDebt checks what follows the charge of case c on key "k" of s: a
// peek, the next request, and that request again as its wait ends.
func checkDebt(t *testing.T, s *Shard, op Op, args []int64, charge, next Decision) {
	t.Helper()
	if d := decision(t, s, debtT0, op, "k", append(args, 0)...); d.Remaining != -200 || d.Allowed || d.RetryAfter != charge.RetryAfter {
		t.Fatalf("a peek after the charge: %+v, want remaining -200, the charge's wait %d", d, charge.RetryAfter)
	}
	if d := decision(t, s, debtT0, op, "k", append(args, 1)...); d != next {
		t.Fatalf("the next request: %+v, want %+v", d, next)
	}
	if d := decision(t, s, debtT0+next.RetryAfter-1, op, "k", append(args, 1)...); d.Allowed {
		t.Fatalf("a millisecond before its wait: %+v, want a refusal", d)
	}
	if d := decision(t, s, debtT0+next.RetryAfter, op, "k", append(args, 1)...); !d.Allowed {
		t.Fatalf("after its wait: %+v, want it allowed", d)
	}
	checkCounters(t, s)
}

// limitArgs are a case's parameters as a command's Args[:3].
func limitArgs(params []int64) []int64 {
	return append(append([]int64{}, params...), make([]int64, 3-len(params))...)
}

// The example with FORCE: the charge itself.
func TestForceChargePastTheLimit(t *testing.T) {
	for _, c := range debtCases {
		t.Run(c.name, func(t *testing.T) {
			s := NewShard()
			args := limitArgs(c.params)
			if r := run(s, debtT0, forced(c.op, "k", append(args, 1200)...))[0]; r.Type != ResDecision || r.Decision != c.charge {
				t.Fatalf("FORCE 1200: %+v, want %+v", r, c.charge)
			}
			checkDebt(t, s, c.op, args, c.charge, c.next)
		})
	}
}

func TestForceEdges(t *testing.T) {
	t.Run("a charge that fits is a grant", func(t *testing.T) {
		s := NewShard()
		r := run(s, 0, forced(OpToken, "k", 10, 1, 1000, 4))[0]
		if want := (Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: 4000}); r.Decision != want {
			t.Fatalf("%+v, want %+v", r.Decision, want)
		}
	})
	t.Run("a charge creates the key it takes past its limit", func(t *testing.T) {
		s := NewShard()
		r := run(s, 0, forced(OpFixed, "k", 10, 1000, 0, 15))[0]
		if r.Decision.Allowed || r.Decision.Remaining != -5 || apply(s, 0, OpExists, "k").Int != 1 {
			t.Fatalf("%+v, exists %d", r.Decision, apply(s, 0, OpExists, "k").Int)
		}
	})
	t.Run("a refund pays a debt back", func(t *testing.T) {
		s := NewShard()
		run(s, 0, forced(OpToken, "k", 10, 1, 1000, 15))
		if d := decision(t, s, 0, OpToken, "k", 10, 1, 1000, -8); !d.Allowed || d.Remaining != 3 {
			t.Fatalf("refund of 8 after a debt of 5: %+v, want remaining 3", d)
		}
	})
	t.Run("a bucket's debt is capped where it would take MaxDuration to drain", func(t *testing.T) {
		s := NewShard()
		d := run(s, 0, forced(OpToken, "k", 1, 1, 1_000_000, MaxCount))[0].Decision
		if d.Allowed || d.RetryAfter > MaxDuration || d.ResetAfter > MaxDuration || d.Remaining != 1-MaxDuration/1_000_000 {
			t.Fatalf("%+v: want every wait within %d", d, int64(MaxDuration))
		}
	})
	t.Run("a window's count is capped at MaxCount", func(t *testing.T) {
		s := NewShard()
		for range 3 {
			run(s, 0, forced(OpSliding, "k", 10, 1000, 0, MaxCount))
		}
		if d := decision(t, s, 0, OpSliding, "k", 10, 1000, 0, 0); d.Remaining != 10-MaxCount {
			t.Fatalf("%+v, want remaining %d", d, 10-MaxCount)
		}
	})
	t.Run("a log charged every millisecond keeps at most MaxLogLimit entries", func(t *testing.T) {
		s := NewShard()
		for now := range int64(MaxLogLimit + 50) {
			run(s, now, forced(OpLog, "k", 2, 1_000_000, 0, 1))
		}
		i := s.keys.find([]byte("k"))
		if n := len(s.keys.log(i)); n != MaxLogLimit {
			t.Fatalf("%d entries, want %d", n, MaxLogLimit)
		}
		if d := decision(t, s, MaxLogLimit+50, OpLog, "k", 2, 1_000_000, 0, 0); d.Remaining != 2-(MaxLogLimit+50) {
			t.Fatalf("%+v: the merged entries must still count every unit", d)
		}
		checkCounters(t, s)
	})
	t.Run("FORCE excludes PARTIAL, and the ops it has no meaning for", func(t *testing.T) {
		for _, c := range []Command{
			func() Command { c := forced(OpToken, "k", 10, 1, 1000, 4); c.Flags |= FlagPartial; return c }(),
			forced(OpAcquire, "k", 10, 1000, 0, 1),
			forced(OpThrottle, "k", 10, 1, 1, 1),
		} {
			if err := c.Check(); !errors.Is(err, ErrParam) {
				t.Fatalf("%v flags %#x: %v, want ErrParam", c.Op, c.Flags, err)
			}
		}
	})
}

// RL.ALL with FORCE charges every limit, all of them, whether each had room
// or not; the overall decision says whether all did.
func TestForceAll(t *testing.T) {
	s := NewShard()
	group := func(cost int64) []Command {
		return []Command{cmd(OpAll, "{u}m", 2), forced(OpFixed, "{u}m", 1000, 60_000, 0, cost), forced(OpFixed, "{u}d", 1100, 86_400_000, 0, cost)}
	}
	out := run(s, 0, group(1050)...)
	if out[0].Decision.Allowed || out[1].Decision.Remaining != -50 || !out[2].Decision.Allowed || out[2].Decision.Remaining != 50 {
		t.Fatalf("overall %+v, minute %+v, day %+v", out[0].Decision, out[1].Decision, out[2].Decision)
	}
	if out[0].Decision.Remaining != -50 || out[0].Decision.RetryAfter != 60_000 {
		t.Fatalf("overall %+v: the limit in debt, refused until its window ends", out[0].Decision)
	}
	mixed := group(1)
	mixed[2].Flags = 0
	if r := run(s, 1, mixed...)[0]; !errors.Is(r.Err, ErrAllMember) {
		t.Fatalf("FORCE on one limit only: %+v", r)
	}
}

// RL.CHECK with FORCE charges as its policy's command would; a shadow
// policy still answers allowed, and reports what enforcing would refuse.
func TestForceCheck(t *testing.T) {
	s := NewShard()
	for _, shadow := range []bool{false, true} {
		set := Command{Op: OpPolicySet, Value: []byte("p"), Args: [4]int64{100, 60_000, 0, int64(OpFixed)}}
		if shadow {
			set.Flags = FlagShadow
		}
		check := Command{Op: OpCheck, Flags: FlagForce, Key: []byte("k"), Value: []byte("p"), Args: [4]int64{3: 120}}
		out := run(s, 0, set, Command{Op: OpDel, Key: []byte("k")}, check)
		d := out[2].Decision
		if d.Remaining != -20 || d.Allowed != shadow || extra(t, out[2], "shadow_denied") != map[bool]int64{false: 0, true: 1}[shadow] {
			t.Fatalf("shadow %v: %+v", shadow, out[2])
		}
	}
}
