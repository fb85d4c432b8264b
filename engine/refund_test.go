package engine

import (
	"testing"

	"github.com/rlserver/rlserver/internal/calendar"
)

// A negative cost gives units back, never beyond a full budget.
func TestRefundsGiveBackUpToFull(t *testing.T) {
	const now = 100_000
	for _, tc := range []struct {
		name   string
		op     Op
		params []int64
	}{
		{"sliding", OpSliding, []int64{5, 1000, 0}},
		{"fixed", OpFixed, []int64{5, 1000, 0}},
		{"log", OpLog, []int64{5, 1000, 0}},
		{"token", OpToken, []int64{5, 1, 1000}},
		{"leaky", OpLeaky, []int64{5, 1, 1000}},
		{"gcra", OpGCRA, []int64{4, 1, 1000}},
		{"shape", OpShape, []int64{5, 1, 1000}},
		{"quota", OpQuota, []int64{5, int64(calendar.Daily), 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewShard()
			cost := func(n int64) Decision { return decision(t, s, now, tc.op, "k", append(tc.params, n)...) }
			if d := cost(5); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("spending all: %+v", d)
			}
			if d := cost(-2); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("refund of 2: %+v, want 2 left", d)
			}
			if d := cost(2); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("spending the refund: %+v", d)
			}
			if d := cost(-100); !d.Allowed || d.Remaining != 5 || d.ResetAfter != 0 {
				t.Fatalf("refund of more than was spent: %+v, want exactly full", d)
			}
			if d := cost(6); d.Allowed || d.RetryAfter != RetryNever {
				t.Fatalf("refunds never raise the budget: %+v", d)
			}
		})
	}
}

func TestRefundOfAnAbsentKeyCreatesNothing(t *testing.T) {
	s := NewShard()
	if d := decision(t, s, 1000, OpSliding, "k", 5, 1000, 0, -3); !d.Allowed || d.Remaining != 5 {
		t.Fatalf("refund on no key: %+v", d)
	}
	if n := apply(s, 1000, OpDBSize, "").Int; n != 0 {
		t.Fatalf("DBSIZE %d after a refund on no key", n)
	}
}

// PARTIAL grants what is available, up to the cost, and says how much.
func TestPartialGrantsWhatIsAvailable(t *testing.T) {
	s := NewShard()
	const now = 100_000
	partial := func(cost int64) Result {
		c := cmd(OpToken, "k", 10, 1, 1000, cost)
		c.Flags = FlagPartial
		return run(s, now, c)[0]
	}
	decision(t, s, now, OpToken, "k", 10, 1, 1000, 7)
	r := partial(5)
	if d := r.Decision; !d.Allowed || d.Remaining != 0 || extra(t, r, "granted") != 3 {
		t.Fatalf("PARTIAL 5 of 3 available: %+v, want 3 granted", r)
	}
	r = partial(5)
	if d := r.Decision; d.Allowed || d.RetryAfter != 1000 || extra(t, r, "granted") != 0 {
		t.Fatalf("PARTIAL with nothing left: %+v, want 0 granted and a retry when one unit is", r)
	}
	r = partial(2)
	if r.NExtras != 1 {
		t.Fatalf("PARTIAL reply: %+v", r)
	}
}
