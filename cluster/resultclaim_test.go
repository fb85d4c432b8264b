package cluster

import (
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// applyClaimed applies l as the proposer of its entry would have it
// applied: claimed, of n commands, and withdrawn once applied. It returns
// the entry's results, failing t when they were not written for it.
func applyClaimed(t *testing.T, f *shardFSM, l *raft.Log, n int) []engine.Result {
	t.Helper()
	claim := f.claims.register(l.Data, make([]engine.Result, n))
	out := f.ApplyBatch([]*raft.Log{l})
	results, filled := f.claims.withdraw(l.Data, claim)
	if out[0] != claim || !filled {
		t.Fatalf("the entry's response %v (filled %v), not its claim", out[0], filled)
	}
	if claim.results != nil {
		t.Fatal("a withdrawn claim still holds its buffer")
	}
	return results
}

// claimEntry is an entry of one sliding-window decision on key at now.
func claimEntry(now int64, key string) *raft.Log {
	reqs := newRequests([][]engine.Command{{sliding(key, 10, 60_000)}})
	return &raft.Log{Type: raft.LogCommand, Data: appendBatch(nil, now*1000, reqs)}
}

// An entry with a claim has its results written into the claim's buffer and
// the claim for its response; one without (a follower's, a sweep, a replay)
// is applied alike, its response nil, and its results kept nowhere.
func TestResultsGoToTheEntrysClaim(t *testing.T) {
	const now = 1_700_000_000_000
	claimed, unclaimed := newShardFSM(0, &observerSlot{}, nil, nil), newShardFSM(0, &observerSlot{}, nil, nil)
	for i := range 3 {
		l := claimEntry(now, "a")
		got := applyClaimed(t, claimed, l, 1)
		d := got[0].Decision
		if want := int64(10 - 1 - i); !d.Allowed || d.Remaining != want {
			t.Fatalf("decision %d: %+v, want allowed with %d remaining", i, d, want)
		}
		if out := unclaimed.ApplyBatch([]*raft.Log{claimEntry(now, "a")}); out[0] != nil {
			t.Fatalf("unclaimed entry %d answered %v", i, out[0])
		}
	}
	if a, b := claimed.inspect(engine.Command{Op: engine.OpDigest}).Text, unclaimed.inspect(engine.Command{Op: engine.OpDigest}).Text; a != b {
		t.Fatalf("the replicas differ: %.12s and %.12s", a, b)
	}
	for i, r := range unclaimed.scratch {
		if !reflect.ValueOf(r).IsZero() {
			t.Fatalf("scratch result %d kept %+v", i, r)
		}
	}
}

// A claim withdrawn before its entry applies (the proposer gave up: its
// leadership was lost) is never written, though the entry still applies.
func TestWithdrawnClaimIsNotWritten(t *testing.T) {
	f := newShardFSM(0, &observerSlot{}, nil, nil)
	l := claimEntry(1_700_000_000_000, "a")
	buf := []engine.Result{{Int: 42}}
	claim := f.claims.register(l.Data, buf)
	if _, filled := f.claims.withdraw(l.Data, claim); filled {
		t.Fatal("withdrawn before applying, yet filled")
	}
	if out := f.ApplyBatch([]*raft.Log{l}); out[0] != nil {
		t.Fatalf("a withdrawn claim's entry answered %v", out[0])
	}
	if buf[0].Type != engine.ResNone || buf[0].Int != 42 {
		t.Fatalf("the withdrawn buffer was written: %+v", buf[0])
	}
	if got := f.stats().Keys; got != 1 {
		t.Fatalf("%d keys: the entry did not apply", got)
	}
}

// A proposer that withdraws while the entry applies either gets the results
// or a buffer that nothing writes any more: it reuses the buffer at once,
// and the race detector and the check below see any late write.
func TestWithdrawWhileApplyingNeverSharesTheBuffer(t *testing.T) {
	f := newShardFSM(0, &observerSlot{}, nil, nil)
	var filled, withdrawnFirst int
	for i := range 2000 {
		l := claimEntry(1_700_000_000_000+int64(i), "a")
		buf := make([]engine.Result, 1)
		claim := f.claims.register(l.Data, buf)
		var wg sync.WaitGroup
		wg.Go(func() { f.ApplyBatch([]*raft.Log{l}) })
		if _, ok := f.claims.withdraw(l.Data, claim); ok {
			filled++
			if buf[0].Type != engine.ResDecision {
				t.Fatalf("entry %d: filled, but the buffer holds %+v", i, buf[0])
			}
		} else {
			withdrawnFirst++
		}
		buf[0] = engine.Result{Int: -1} // the proposer reuses it for its next entry
		wg.Wait()
		if buf[0].Type != engine.ResNone || buf[0].Int != -1 {
			t.Fatalf("entry %d: written after its claim was withdrawn: %+v", i, buf[0])
		}
	}
	t.Logf("%d filled before the withdrawal, %d withdrawn first", filled, withdrawnFirst)
}
