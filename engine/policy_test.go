package engine

import (
	"errors"
	"testing"

	"github.com/rlserver/rlserver/internal/calendar"
)

func setPolicy(t *testing.T, s *Shard, name string, op Op, shadow bool, params ...int64) {
	t.Helper()
	c := Command{Op: OpPolicySet, Value: []byte(name)}
	copy(c.Args[:3], params)
	c.Args[3] = int64(op)
	if shadow {
		c.Flags = FlagShadow
	}
	if !c.Valid() {
		t.Fatalf("policy %s %v %v invalid", name, op, params)
	}
	if r := run(s, 0, c)[0]; r.Type != ResOK {
		t.Fatalf("RL.POLICY SET: %+v", r)
	}
}

func check(s *Shard, now int64, policy, key string, cost int64) Result {
	return run(s, now, Command{Op: OpCheck, Value: []byte(policy), Key: []byte(key), Args: [4]int64{3: cost}})[0]
}

func TestPolicyChangesTakeEffectAtOnce(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	setPolicy(t, s, "orders", OpSliding, false, 2, 60_000)
	for range 2 {
		if r := check(s, now, "orders", "user:ada", 1); !r.Decision.Allowed {
			t.Fatalf("within the policy: %+v", r)
		}
	}
	if r := check(s, now, "orders", "user:ada", 1); r.Decision.Allowed || extra(t, r, "shadow_denied") != 0 {
		t.Fatalf("over the policy: %+v", r)
	}
	setPolicy(t, s, "orders", OpSliding, false, 5, 60_000)
	if r := check(s, now, "orders", "user:ada", 1); !r.Decision.Allowed || r.Decision.Remaining != 2 || r.Decision.Limit != 5 {
		t.Fatalf("after raising the limit: %+v, want 2 of 5 left", r)
	}
	// A new algorithm: the key starts afresh under it.
	setPolicy(t, s, "orders", OpToken, false, 10, 1, 1000)
	if r := check(s, now, "orders", "user:ada", 1); !r.Decision.Allowed || r.Decision.Remaining != 9 {
		t.Fatalf("after changing the algorithm: %+v, want 9 of 10 left", r)
	}
	if typ := apply(s, now, OpType, "user:ada").Text; typ != "rl.token" {
		t.Fatalf("TYPE %s after the policy's algorithm changed", typ)
	}
	// The policy's key is the key: the command with the same parameters
	// agrees with it.
	if d := decision(t, s, now, OpToken, "user:ada", 10, 1, 1000, 0); d.Remaining != 9 {
		t.Fatalf("RL.TOKEN peek: %+v", d)
	}
}

// Two policies of different algorithms cannot reset each other's keys: only
// a key of the algorithm a policy had before its last change starts afresh.
func TestPoliciesOfOtherAlgorithmsDoNotResetKeys(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	setPolicy(t, s, "a", OpSliding, false, 2, 60_000)
	setPolicy(t, s, "b", OpFixed, false, 2, 60_000)
	check(s, now, "a", "k", 2)
	if r := check(s, now, "b", "k", 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("policy b on policy a's key: %+v, want WRONGTYPE", r)
	}
	decision(t, s, now, OpSliding, "direct", 5, 1000, 0, 1)
	if r := check(s, now, "b", "direct", 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("a policy on an RL.SLIDING key of another algorithm: %+v", r)
	}
	// b moves from FIXED to TOKEN: its FIXED keys restart, a's SLIDING key
	// still does not.
	check(s, now, "b", "fk", 2)
	setPolicy(t, s, "b", OpToken, false, 2, 1, 1000)
	if r := check(s, now, "b", "fk", 1); !r.Decision.Allowed || r.Decision.Remaining != 1 {
		t.Fatalf("b's own key after its change: %+v", r)
	}
	if r := check(s, now, "b", "k", 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("b on a's key after b's change: %+v", r)
	}
}

// A shadow policy with PARTIAL grants the whole cost, and reports when the
// policy would have granted less; the state spends what enforcing would.
func TestShadowPolicyWithPartial(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	setPolicy(t, s, "s", OpFixed, true, 2, 60_000)
	c := Command{Op: OpCheck, Value: []byte("s"), Key: []byte("k"), Flags: FlagPartial, Args: [4]int64{3: 3}}
	r := run(s, now, c)[0]
	if !r.Decision.Allowed || extra(t, r, "granted") != 3 || extra(t, r, "shadow_denied") != 1 {
		t.Fatalf("shadow PARTIAL of 3 over a limit of 2: %+v", r)
	}
	if d := decision(t, s, now, OpFixed, "k", 2, 60_000, 0, 0); d.Remaining != 0 {
		t.Fatalf("the state after it: %+v, want the 2 enforcing would have spent", d)
	}
}

func TestShadowPolicyAllowsButCounts(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	setPolicy(t, s, "trial", OpFixed, true, 1, 1000)
	first, second := check(s, now, "trial", "k", 1), check(s, now, "trial", "k", 1)
	if !first.Decision.Allowed || extra(t, first, "shadow_denied") != 0 {
		t.Fatalf("first: %+v", first)
	}
	if d := second.Decision; !d.Allowed || d.RetryAfter != 0 || extra(t, second, "shadow_denied") != 1 {
		t.Fatalf("second: %+v, want allowed but reported as shadow-denied", second)
	}
	if n := s.Stats().ShadowDenied; n != 1 {
		t.Fatalf("Stats.ShadowDenied %d", n)
	}
	got := run(s, now, Command{Op: OpPolicyList, Value: []byte("trial")})[0]
	want := []Field{{Name: "definition", Text: "FIXED 1 1000 SHADOW"}, {Name: "shadow", Int: 1},
		{Name: "checks", Int: 2}, {Name: "denied", Int: 0}, {Name: "shadow_denied", Int: 1}}
	if len(got.Fields) != len(want) {
		t.Fatalf("RL.POLICY GET: %+v", got)
	}
	for i := range want {
		if got.Fields[i] != want[i] {
			t.Fatalf("RL.POLICY GET field %d: %+v, want %+v", i, got.Fields[i], want[i])
		}
	}
}

func TestPolicyErrorsListAndDelete(t *testing.T) {
	s := NewShard()
	if r := check(s, 1000, "nope", "k", 1); !errors.Is(r.Err, ErrNoPolicy) || r.Err.Error() != "no such policy 'nope'" {
		t.Fatalf("unknown policy: %+v", r)
	}
	setPolicy(t, s, "b", OpQuota, false, 1_000_000, int64(calendar.Monthly), 180*60_000)
	setPolicy(t, s, "a", OpGCRA, false, 4, 1, 1000)
	list := run(s, 0, Command{Op: OpPolicyList})[0].Fields
	if len(list) != 2 || list[0] != (Field{Name: "a", Text: "GCRA 4 1 1000"}) || list[1] != (Field{Name: "b", Text: "QUOTA 1000000 MONTH OFFSET 180"}) {
		t.Fatalf("RL.POLICY LIST: %+v", list)
	}
	apply(s, 1000, OpIncrBy, "counter", 1)
	if r := check(s, 1000, "a", "counter", 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("a policy on a string key: %+v", r)
	}
	if r := run(s, 0, Command{Op: OpPolicyDel, Value: []byte("a")})[0]; r.Int != 1 {
		t.Fatalf("RL.POLICY DEL: %+v", r)
	}
	if r := run(s, 0, Command{Op: OpPolicyList, Value: []byte("a")})[0]; r.Type != ResNil {
		t.Fatalf("RL.POLICY GET of a deleted policy: %+v", r)
	}
}

func TestPoliciesSurviveSnapshots(t *testing.T) {
	s := NewShard()
	setPolicy(t, s, "orders", OpSliding, true, 100, 60_000)
	before := s.digest()
	r, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	if r.digest() != before {
		t.Fatal("digest changed across a snapshot")
	}
	if p := r.policies["orders"]; p == nil || p.definition != (definition{op: OpSliding, params: [3]int64{100, 60_000}, shadow: true}) {
		t.Fatalf("restored policy %+v", p)
	}
	if NewShard().digest() == before {
		t.Fatal("policies are not in the digest")
	}
}
