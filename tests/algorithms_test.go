package tests

import (
	"fmt"
	"strings"
	"testing"
)

// step is one request of a scenario: at t0+at ms, command gives want.
type step struct {
	at      int64
	command string
	want    decision
}

// Every algorithm over the network, with explicit times. The expected values
// follow from each algorithm's definition (docs/algorithms.md): a test of the
// exact arithmetic, the rounding, and the COST option.
func TestAlgorithmScenarios(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	scenarios := []struct {
		name  string
		steps []step
	}{
		{"token bucket (README example)", []step{
			{0, "RL.TOKEN upload:ada 10 1 1000 COST 4", allow(10, 6, 4000)},
			{0, "RL.TOKEN upload:ada 10 1 1000 COST 8", deny(10, 6, 2000, 4000)},
			{0, "RL.TOKEN upload:ada 10 1 1000 COST 0", allow(10, 6, 4000)},
			{2000, "RL.TOKEN upload:ada 10 1 1000 COST 8", allow(10, 0, 10000)},
			{2000, "RL.TOKEN upload:ada 10 1 1000", deny(10, 0, 1000, 10000)},
			// 2.5 tokens back: a partly refilled token is not yet spendable.
			{4500, "RL.TOKEN upload:ada 10 1 1000 COST 2", allow(10, 0, 9500)},
			{4500, "RL.TOKEN upload:ada 10 1 1000 COST 11", deny(10, 0, -1, 9500)},
		}},
		{"leaky bucket, 2 leaked per second", []step{
			{0, "RL.LEAKY q 4 2 1000 COST 4", allow(4, 0, 2000)},
			{0, "RL.LEAKY q 4 2 1000", deny(4, 0, 500, 2000)},
			{500, "RL.LEAKY q 4 2 1000", allow(4, 0, 2000)},
			{1500, "RL.LEAKY q 4 2 1000 COST 0", allow(4, 2, 1000)},
			{1500, "RL.LEAKY q 4 2 1000 COST 5", deny(4, 2, -1, 1000)},
		}},
		{"GCRA, redis-cell's vectors in milliseconds", []step{
			{0, "RL.GCRA g 4 1 1000 COST 6", deny(5, 5, -1, 0)},
			{0, "RL.GCRA g 4 1 1000", allow(5, 4, 1000)},
			{0, "RL.GCRA g 4 1 1000", allow(5, 3, 2000)},
			{0, "RL.GCRA g 4 1 1000", allow(5, 2, 3000)},
			{0, "RL.GCRA g 4 1 1000", allow(5, 1, 4000)},
			{0, "RL.GCRA g 4 1 1000", allow(5, 0, 5000)},
			{0, "RL.GCRA g 4 1 1000", deny(5, 0, 1000, 5000)},
			{3000, "RL.GCRA g 4 1 1000", allow(5, 2, 3000)},
			{3100, "RL.GCRA g 4 1 1000", allow(5, 1, 3900)},
			{4000, "RL.GCRA g 4 1 1000", allow(5, 1, 4000)},
			{8000, "RL.GCRA g 4 1 1000", allow(5, 4, 1000)},
			{9500, "RL.GCRA g 4 1 1000", allow(5, 4, 1000)},
			{9500, "RL.GCRA g 4 1 1000 COST 0", allow(5, 4, 1000)},
			{9500, "RL.GCRA g 4 1 1000 COST 2", allow(5, 2, 3000)},
			{9500, "RL.GCRA g 4 1 1000 COST 5", deny(5, 2, 3000, 3000)},
		}},
		{"sliding log", []step{
			{0, "RL.LOG l 3 1000", allow(3, 2, 1000)},
			{100, "RL.LOG l 3 1000", allow(3, 1, 1000)},
			{200, "RL.LOG l 3 1000 COST 0", allow(3, 1, 900)},
			{200, "RL.LOG l 3 1000", allow(3, 0, 1000)},
			{300, "RL.LOG l 3 1000", deny(3, 0, 700, 900)},
			{999, "RL.LOG l 3 1000", deny(3, 0, 1, 201)},
			{1000, "RL.LOG l 3 1000", allow(3, 0, 1000)}, // the grant at 0 has left
			{1000, "RL.LOG l 3 1000 COST 2", deny(3, 0, 200, 1000)},
			{1000, "RL.LOG l 3 1000 COST 4", deny(3, 0, -1, 1000)},
		}},
		{"fixed window", []step{
			{500, "RL.FIXED f 3 1000 COST 2", allow(3, 1, 500)},
			{500, "RL.FIXED f 3 1000 COST 2", deny(3, 1, 500, 500)},
			{999, "RL.FIXED f 3 1000", allow(3, 0, 1)},
			{1000, "RL.FIXED f 3 1000 COST 3", allow(3, 0, 1000)},
			{1000, "RL.FIXED f 3 1000 COST 4", deny(3, 0, -1, 1000)},
		}},
		{"sliding window with costs", []step{
			{0, "RL.SLIDING s 10 1000 COST 6", allow(10, 4, 2000)},
			// 6 + 5 > 10: wait for the next window, where 6 weighs in
			// until only 5 of it is left: ceil(6 * 833/1000) = 5.
			{500, "RL.SLIDING s 10 1000 COST 5", deny(10, 4, 667, 1500)},
			{1166, "RL.SLIDING s 10 1000 COST 5", deny(10, 4, 1, 834)},
			{1167, "RL.SLIDING s 10 1000 COST 5", allow(10, 0, 1833)},
		}},
	}
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := srv.Client(t, 3)
			for _, st := range sc.steps {
				// Separate keys per scenario, so they share the server.
				args := words(st.command)
				args[1] = fmt.Sprintf("%s:%d", args[1], i)
				setClock(t, c, t0+st.at)
				d, err := parseDecision(do(t, c, args...))
				if err != nil {
					t.Fatalf("t0+%d %s: %v", st.at, st.command, err)
				}
				if d != st.want {
					t.Errorf("t0+%d %s = %v, want %v", st.at, st.command, d, st.want)
				}
			}
		})
	}
}

// algorithms are the RL.* commands with a budget of 10, as a template whose
// %s is the key.
var algorithms = []struct{ name, template string }{
	{"sliding", "RL.SLIDING %s 10 1000"},
	{"fixed", "RL.FIXED %s 10 1000"},
	{"log", "RL.LOG %s 10 1000"},
	{"token", "RL.TOKEN %s 10 1 100"},
	{"leaky", "RL.LEAKY %s 10 1 100"},
	{"gcra", "RL.GCRA %s 9 1 100"},
}

// What every algorithm promises alike, on a stopped clock: COST 0 peeks and
// creates nothing, a cost above the budget can never be granted
// (retry_after -1), COST n spends n, and a refusal spends nothing.
func TestAlgorithmsCostContract(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.Client(t, 2)
	setClock(t, c, t0+250)
	for _, alg := range algorithms {
		t.Run(alg.name, func(t *testing.T) {
			key := "cost:" + alg.name
			cmd := func(cost int) string { return fmt.Sprintf(alg.template+" COST %d", key, cost) }
			expectDecision(t, c, cmd(0), allow(10, 10, 0))
			expectDecision(t, c, cmd(11), deny(10, 10, -1, 0))
			if n := doInt(t, c, "EXISTS", key); n != 0 {
				t.Fatalf("a peek and a refusal created the key")
			}
			if d := decide(t, c, cmd(3)); !d.Allowed || d.Remaining != 7 {
				t.Fatalf("%s = %v, want allowed with 7 remaining", cmd(3), d)
			}
			for range 3 {
				if d := decide(t, c, cmd(0)); !d.Allowed || d.Remaining != 7 || d.RetryAfter != 0 {
					t.Fatalf("peek %s = %v, want allowed with 7 remaining", cmd(0), d)
				}
			}
			if d := decide(t, c, cmd(8)); d.Allowed || d.Remaining != 7 || d.RetryAfter < 1 {
				t.Fatalf("%s = %v, want refused with 7 remaining and a wait", cmd(8), d)
			}
			if d := decide(t, c, cmd(7)); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("%s = %v, want allowed with 0 remaining", cmd(7), d)
			}
			if d := decide(t, c, cmd(11)); d.Allowed || d.RetryAfter != -1 {
				t.Fatalf("%s = %v, want refused for ever", cmd(11), d)
			}
		})
	}
}

// retry_after_ms is exact for every algorithm: one millisecond before it the
// same request is still refused, at it the request is granted.
func TestAlgorithmsRetryAfterIsExact(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.Client(t, 3)
	for _, alg := range algorithms {
		for _, cost := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s cost %d", alg.name, cost), func(t *testing.T) {
				key := fmt.Sprintf("retry:%s:%d", alg.name, cost)
				cmd := fmt.Sprintf(alg.template+" COST %d", key, cost)
				now := int64(t0 + 123)
				setClock(t, c, now)
				if d := decide(t, c, strings.Replace(cmd, fmt.Sprintf("COST %d", cost), "COST 10", 1)); !d.Allowed {
					t.Fatalf("filling the budget refused: %v", d)
				}
				setClock(t, c, now+37) // partway, so windows and buckets are mid-period
				d := decide(t, c, cmd)
				if d.Allowed || d.RetryAfter < 1 {
					t.Fatalf("%s on a full budget = %v, want refused with a wait", cmd, d)
				}
				setClock(t, c, now+37+d.RetryAfter-1)
				if early := decide(t, c, cmd); early.Allowed {
					t.Fatalf("granted 1 ms before retry_after_ms %d: %v", d.RetryAfter, early)
				}
				setClock(t, c, now+37+d.RetryAfter)
				if onTime := decide(t, c, cmd); !onTime.Allowed {
					t.Fatalf("refused at retry_after_ms %d: %v", d.RetryAfter, onTime)
				}
			})
		}
	}
}
