package engine

import "testing"

// TestDecisionsCountedByOp checks Stats.Decisions on a mix of every kind the
// counts must tell apart: a decision allowed and one denied, CL.THROTTLE, a
// decision that fails, an RL.ALL that allows, one that denies and one
// refused as a group; and that Allowed and Denied are their sums.
func TestDecisionsCountedByOp(t *testing.T) {
	token := func(key string, capacity, cost int64) Command { return cmd(OpToken, key, capacity, 1, 1000, cost) }
	sliding := func(key string, limit int64) Command { return cmd(OpSliding, key, limit, 60_000, 0, 1) }
	all := func(n int64) Command { return Command{Op: OpAll, Args: [4]int64{n}} }
	s := NewShard()
	run(s, 1000,
		sliding("a", 1),                             // allowed
		sliding("a", 1),                             // denied
		cmd(OpThrottle, "t", 0, 1, 60, 1),           // allowed (burst 0: one)
		cmd(OpThrottle, "t", 0, 1, 60, 1),           // limited
		token("a", 5, 1),                            // WRONGTYPE: "a" is a sliding window
		all(2), sliding("b", 10), token("c", 10, 1), // allowed: both limits count
		all(2), sliding("d", 10), token("e", 1, 2), // denied as a group: e costs more than it holds
		all(2), sliding("f", 10), sliding("f", 10), // refused: a key twice
	)
	want := map[Op]DecisionCount{
		OpSliding:  {Allowed: 3, Denied: 1}, // d is allowed on its own in the denied group
		OpThrottle: {Allowed: 1, Denied: 1},
		OpToken:    {Allowed: 1, Denied: 1},
	}
	st := s.Stats()
	var allowed, denied int64
	for op, got := range st.Decisions {
		if got != want[Op(op)] {
			t.Errorf("%s: %+v, want %+v", Op(op).Spec().Name, got, want[Op(op)])
		}
		allowed += got.Allowed
		denied += got.Denied
	}
	if st.Allowed != allowed || st.Denied != denied {
		t.Errorf("totals %d allowed, %d denied; the ops add up to %d and %d", st.Allowed, st.Denied, allowed, denied)
	}
	// A restored shard's counters start again from zero, as INFO's do.
	r, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Allowed != 0 || st.Denied != 0 || st.Decisions != ([opCount]DecisionCount{}) {
		t.Errorf("restored counters %+v", st)
	}
}
