package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// group builds an RL.ALL head followed by its limits.
func group(members ...Command) []Command {
	head := Command{Op: OpAll, Key: members[0].Key, Args: [4]int64{int64(len(members))}}
	return append([]Command{head}, members...)
}

func TestAllIsAllOrNothing(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	limits := func(cost int64) []Command {
		return group(
			cmd(OpSliding, "{ada}:sec", 2, 1000, 0, cost),
			cmd(OpFixed, "{ada}:min", 3, 60_000, 0, cost),
			cmd(OpToken, "{ada}:day", 100, 100, 86_400_000, cost),
		)
	}
	for i := range 2 {
		out := run(s, now, limits(1)...)
		if out[0].Members != 3 || !out[0].Decision.Allowed {
			t.Fatalf("call %d: %+v", i, out[0])
		}
	}
	// The per-second limit denies: nothing is consumed from the others.
	out := run(s, now+10, limits(1)...)
	head := out[0].Decision
	// The sliding window's two grants weigh in until half of the next
	// second has passed: 1490 ms.
	if head.Allowed || head.RetryAfter != 1490 || head.Remaining != 0 {
		t.Fatalf("overall: %+v, want denied for 1490 ms", head)
	}
	if d := out[2].Decision; !d.Allowed || d.Remaining != 1 {
		t.Fatalf("the minute limit's own reply: %+v, want allowed with 1 left (nothing consumed)", d)
	}
	if d := decision(t, s, now+10, OpFixed, "{ada}:min", 3, 60_000, 0, 0); d.Remaining != 1 {
		t.Fatalf("minute limit after the denied call: %+v, want 1 left", d)
	}
	// The overall reply: the limit with the fewest left, the longest reset.
	out = run(s, now+1500, limits(1)...)
	day := out[3].Decision
	if d := out[0].Decision; !d.Allowed || d.Remaining != 0 || d.Limit != 2 || d.ResetAfter != day.ResetAfter {
		t.Fatalf("overall %+v, want allowed, the second limit's 0 of 2 left, the day's reset (%d)", d, day.ResetAfter)
	}
}

func TestAllRetryIsTheLongestWait(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	decision(t, s, now, OpFixed, "a", 1, 1000, 0, 1) // window ends at 1_001_000
	decision(t, s, now, OpFixed, "b", 1, 5000, 0, 1) // window ends at 1_005_000
	out := run(s, now, group(cmd(OpFixed, "a", 1, 1000, 0, 1), cmd(OpFixed, "b", 1, 5000, 0, 1))...)
	if d := out[0].Decision; d.Allowed || d.RetryAfter != 5000 {
		t.Fatalf("overall %+v, want the longest wait, 5000", d)
	}
	out = run(s, now, group(cmd(OpFixed, "a", 1, 1000, 0, 1), cmd(OpFixed, "c", 1, 1000, 0, 2))...)
	if d := out[0].Decision; d.RetryAfter != RetryNever {
		t.Fatalf("overall %+v, want never: one cost exceeds its limit", d)
	}
}

func TestAllRefusesBadGroupsWholly(t *testing.T) {
	s := NewShard()
	decision(t, s, 1000, OpToken, "tok", 5, 1, 1000, 1)
	partial := cmd(OpFixed, "p", 5, 1000, 0, 1)
	partial.Flags = FlagPartial
	for _, tc := range []struct {
		name  string
		group []Command
		want  error
	}{
		{"wrong type", group(cmd(OpSliding, "new", 5, 1000, 0, 1), cmd(OpSliding, "tok", 5, 1000, 0, 1)), ErrWrongType},
		{"same key twice", group(cmd(OpSliding, "x", 5, 1000, 0, 1), cmd(OpSliding, "x", 5, 1000, 0, 1)), ErrAllMember},
		{"partial", group(partial), ErrAllMember},
		{"throttle", group(cmd(OpThrottle, "t", 5, 1, 1, 1)), ErrAllMember},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(s, 1000, tc.group...)
			if !errors.Is(out[0].Err, tc.want) || out[0].Members != len(tc.group)-1 {
				t.Fatalf("head %+v, want %v", out[0], tc.want)
			}
			if n := apply(s, 1000, OpDBSize, "").Int; n != 1 {
				t.Fatalf("DBSIZE %d: a refused group created keys", n)
			}
		})
	}
}

// A truncated group (never built by commands, but a log could hold one)
// answers an error and leaves the rest of the batch alone.
func TestAllTruncatedGroup(t *testing.T) {
	s := NewShard()
	head := Command{Op: OpAll, Args: [4]int64{3}}
	out := run(s, 1000, head, cmd(OpSliding, "a", 5, 1000, 0, 1))
	if !errors.Is(out[0].Err, ErrAllMember) {
		t.Fatalf("truncated group: %+v", out[0])
	}
}

// Whatever the traffic, a denied RL.ALL changes nothing, and each limit of
// the group never grants more than its budget.
func TestPropertyAllNeverConsumesOnDenial(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := NewShard()
		now := int64(1_000_000)
		var grants []grant
		for range 1500 {
			now += rng.Int64N(40)
			cost := 1 + rng.Int64N(3)
			g := group(
				cmd(OpFixed, "{u}:a", 10, 500, 0, cost),
				cmd(OpToken, "{u}:b", 6, 1, 100, cost),
				cmd(OpSliding, "{u}:c", 8, 300, 0, cost),
			)
			if rng.IntN(3) == 0 { // other traffic on one of the limits alone
				decision(t, s, now, OpToken, "{u}:b", 6, 1, 100, 1)
			}
			apply(s, now, OpExists, "{u}:a") // the clock at now: the digest's view is of one instant
			before := s.digest()
			out := run(s, now, g...)
			if !out[0].Decision.Allowed {
				if s.digest() != before {
					t.Fatalf("seed %d: a denied RL.ALL changed the state", seed)
				}
				continue
			}
			for j := 1; j < len(out); j++ {
				if !out[j].Decision.Allowed {
					t.Fatalf("seed %d: allowed overall with limit %d denying", seed, j)
				}
			}
			grants = append(grants, grant{now, cost})
		}
		for _, g := range grants {
			start := g.at - g.at%500
			if n := sumIn(grants, start, start+500); n > 10 {
				t.Fatalf("seed %d: %d granted in the fixed window at %d, limit 10", seed, n, start)
			}
		}
	}
}
