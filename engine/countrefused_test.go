package engine

import (
	"errors"
	"testing"

	"github.com/rlserver/rlserver/internal/calendar"
)

// counting is a decision command with FlagCountRefused.
func counting(op Op, key string, args ...int64) Command {
	c := cmd(op, key, args...)
	c.Flags = FlagCountRefused
	return c
}

func TestCountRefusedWindows(t *testing.T) {
	type step struct {
		now  int64
		cost int64
		want Decision
	}
	cases := []struct {
		name   string
		op     Op
		params []int64
		steps  []step
	}{
		{"fixed: a refused addend is counted, as envoyproxy/ratelimit's INCRBY is", OpFixed, []int64{10, 1000}, []step{
			{1000, 8, Decision{Allowed: true, Limit: 10, Remaining: 2, ResetAfter: 1000}},
			{1100, 5, Decision{Limit: 10, Remaining: -3, RetryAfter: 900, ResetAfter: 900}},
			// 13 counted: one more unit is refused too, until the window ends.
			{1200, 1, Decision{Limit: 10, Remaining: -4, RetryAfter: 800, ResetAfter: 800}},
			{2000, 10, Decision{Allowed: true, Limit: 10, ResetAfter: 1000}},
		}},
		{"fixed: a cost above the limit is counted and never allowed", OpFixed, []int64{3, 1000}, []step{
			{5000, 4, Decision{Limit: 3, Remaining: -1, RetryAfter: RetryNever, ResetAfter: 1000}},
			{5500, 1, Decision{Limit: 3, Remaining: -2, RetryAfter: 500, ResetAfter: 500}},
		}},
		{"fixed: a peek counts nothing", OpFixed, []int64{1, 1000}, []step{
			{0, 1, Decision{Allowed: true, Limit: 1, ResetAfter: 1000}},
			{10, 0, Decision{Allowed: true, Limit: 1, ResetAfter: 990}},
			{20, 0, Decision{Allowed: true, Limit: 1, ResetAfter: 980}},
		}},
		{"sliding: refusals weigh on the next window as spent units do", OpSliding, []int64{4, 1000}, []step{
			{0, 4, Decision{Allowed: true, Limit: 4, ResetAfter: 2000}},
			// refused and counted: 8 in this window. The same cost fits
			// only once both windows have passed.
			{500, 4, Decision{Limit: 4, Remaining: -4, RetryAfter: 1500, ResetAfter: 1500}},
			// half-way through the next window the 8 weigh 4: refused and
			// counted again; the wait for one unit, from the new counts, is
			// exact: 8*(1000-e)/1000 + 1 + 1 <= 4 at e = 750.
			{1500, 1, Decision{Limit: 4, Remaining: -1, RetryAfter: 250, ResetAfter: 1500}},
			// asking a millisecond early is refused and counted too, so the
			// wait grows: 8*(1000-e)/1000 + 2 + 1 <= 4 at e = 875.
			{1749, 1, Decision{Limit: 4, Remaining: -1, RetryAfter: 126, ResetAfter: 1251}},
			{1875, 1, Decision{Allowed: true, Limit: 4, ResetAfter: 1125}},
		}},
		{"quota: a refused cost is counted in the period", OpQuota, []int64{2, int64(calendar.Daily), 0}, []step{
			{0, 2, Decision{Allowed: true, Limit: 2, ResetAfter: 86_400_000}},
			{1000, 1, Decision{Limit: 2, Remaining: -1, RetryAfter: 86_399_000, ResetAfter: 86_399_000}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewShard()
			for i, st := range c.steps {
				args := append(append([]int64{}, c.params...), make([]int64, 3-len(c.params))...)
				r := run(s, st.now, counting(c.op, "k", append(args, st.cost)...))[0]
				if r.Type != ResDecision || r.Decision != st.want {
					t.Fatalf("step %d at %d cost %d: %+v, want %+v", i, st.now, st.cost, r, st.want)
				}
			}
		})
	}
}

// Without the flag a refusal changes nothing, as before: the same sequence
// allows the unit that counting refuses.
func TestRefusalsNotCountedWithoutTheFlag(t *testing.T) {
	s := NewShard()
	decision(t, s, 1000, OpFixed, "k", 10, 1000, 0, 8)
	if d := decision(t, s, 1100, OpFixed, "k", 10, 1000, 0, 5); d.Allowed || d.Remaining != 2 {
		t.Fatalf("refusal: %+v", d)
	}
	if d := decision(t, s, 1200, OpFixed, "k", 10, 1000, 0, 1); !d.Allowed {
		t.Fatalf("a refusal was counted without FlagCountRefused: %+v", d)
	}
}

// A counted refusal creates the key it counts on, and leaves a state the
// snapshot codec accepts.
func TestCountedRefusalCreatesAValidKey(t *testing.T) {
	s := NewShard()
	run(s, 0, counting(OpFixed, "f", 1, 1000, 0, 2), counting(OpSliding, "s", 1, 1000, 0, 2),
		counting(OpQuota, "q", 1, int64(calendar.Monthly), 0, 2))
	if n := apply(s, 0, OpDBSize, "").Int; n != 3 {
		t.Fatalf("keys: %d, want 3", n)
	}
	if _, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat); err != nil {
		t.Fatalf("restore: %v", err)
	}
}

// The count is capped where every count is: a flood of refusals cannot
// overflow it.
func TestCountedRefusalsAreCapped(t *testing.T) {
	s := NewShard()
	for range 3 {
		run(s, 0, counting(OpFixed, "k", 1, 1000, 0, MaxCount))
	}
	r := apply(s, 0, OpInfo, "k")
	for _, f := range r.Fields {
		if f.Name == "count" && f.Int != MaxCount {
			t.Fatalf("count %d, want MaxCount", f.Int)
		}
	}
	if _, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat); err != nil {
		t.Fatalf("restore: %v", err)
	}
}

func TestCountRefusedFlagBounds(t *testing.T) {
	cases := []struct {
		name string
		c    Command
		ok   bool
	}{
		{"fixed", Command{Op: OpFixed, Flags: FlagCountRefused, Args: [4]int64{1, 1, 0, 1}}, true},
		{"sliding", Command{Op: OpSliding, Flags: FlagCountRefused, Args: [4]int64{1, 1, 0, 1}}, true},
		{"quota", Command{Op: OpQuota, Flags: FlagCountRefused, Args: [4]int64{1, 1, 0, 1}}, true},
		{"not a bucket's", Command{Op: OpToken, Flags: FlagCountRefused, Args: [4]int64{1, 1, 1, 1}}, false},
		{"not with PARTIAL", Command{Op: OpFixed, Flags: FlagCountRefused | FlagPartial, Args: [4]int64{1, 1, 0, 1}}, false},
	}
	for _, c := range cases {
		err := c.c.Check()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrParam)) {
			t.Errorf("%s: Check() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
