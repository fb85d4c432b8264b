package engine

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func limitMemory(s *Shard, bytes int64, policy MemoryPolicy) {
	run(s, 0, Command{Op: OpMemoryLimit, Args: [4]int64{bytes, int64(policy)}})
}

// Under noeviction, a flood of new keys is refused with -OOM once the limit
// is reached, and the keys that exist keep their limits exactly.
func TestNoEvictionRefusesNewKeysOnly(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	for i := range 10 {
		decision(t, s, now, OpSliding, fmt.Sprint("user:", i), 3, 60_000, 0, 1)
	}
	limitMemory(s, s.keys.charged()+2*(recordSize+2*indexSlotSize), NoEviction)
	var refused int
	for i := range 1000 {
		r := apply(s, now, OpSliding, fmt.Sprint("flood:", i), 3, 60_000, 0, 1)
		if errors.Is(r.Err, ErrOOM) {
			refused++
		}
	}
	if refused != 998 || s.Stats().RejectedOOM != 998 {
		t.Fatalf("%d refused (%d counted), want all but the 2 that fit", refused, s.Stats().RejectedOOM)
	}
	for i := range 10 {
		d := decision(t, s, now, OpSliding, fmt.Sprint("user:", i), 3, 60_000, 0, 1)
		if !d.Allowed || d.Remaining != 1 {
			t.Fatalf("user:%d after the flood: %+v, want its second unit", i, d)
		}
	}
	// Peeks, refusals and commands on existing keys need no memory.
	if r := apply(s, now, OpSliding, "new", 3, 60_000, 0, 0); r.Type != ResDecision {
		t.Fatalf("peek at the limit: %+v", r)
	}
	if r := apply(s, now, OpIncrBy, "counter", 1); !errors.Is(r.Err, ErrOOM) {
		t.Fatalf("INCR of a new key at the limit: %+v", r)
	}
	out := run(s, now, group(cmd(OpSliding, "user:1", 3, 60_000, 0, 1), cmd(OpFixed, "brand-new", 3, 60_000, 0, 1))...)
	if !errors.Is(out[0].Err, ErrOOM) {
		t.Fatalf("RL.ALL creating a key at the limit: %+v", out[0])
	}
	if d := decision(t, s, now, OpSliding, "user:1", 3, 60_000, 0, 0); d.Remaining != 1 {
		t.Fatalf("the refused RL.ALL consumed: %+v", d)
	}
}

// Under volatile-ttl, room is made by evicting the keys nearest to their
// reset, and the memory charged stays within the limit.
func TestVolatileTTLEvictsTheKeysNearestToReset(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	decision(t, s, now, OpSliding, "long", 3, 3_600_000, 0, 1) // resets in two hours
	for i, window := range []int64{1000, 2000, 4000, 5000, 8000, 10_000, 20_000, 25_000, 40_000} {
		decision(t, s, now, OpFixed, fmt.Sprint("short:", i), 3, window, 0, 1) // resets in window ms
	}
	limit := s.keys.charged()
	limitMemory(s, limit, VolatileTTL)
	decision(t, s, now, OpSliding, "newcomer", 3, 60_000, 0, 1)
	if s.Stats().Evicted != 1 || apply(s, now, OpExists, "short:0").Int != 0 {
		t.Fatalf("evicted %d; short:0 exists %d: want the key nearest to its reset gone", s.Stats().Evicted, apply(s, now, OpExists, "short:0").Int)
	}
	for i := range 200 {
		decision(t, s, now, OpFixed, fmt.Sprint("flood:", i), 3, 10_000, 0, 1)
		if c := s.keys.charged(); c > limit {
			t.Fatalf("charged %d over the limit %d", c, limit)
		}
	}
	if apply(s, now, OpExists, "long").Int != 1 {
		t.Fatal("the key furthest from its reset was evicted")
	}
}

// Eviction depends on the keyspace's layout; a snapshot keeps it, so a
// replica restored from one evicts exactly what the others evict.
func TestEvictionIsTheSameAfterARestore(t *testing.T) {
	a := NewShard()
	times, cmds := randomCommands(3, 4000)
	limitMemory(a, 6*(recordSize+2*indexSlotSize), VolatileTTL)
	out := make([]Result, 1)
	for i := range cmds[:2000] {
		a.Apply(times[i], cmds[i:i+1], out)
	}
	b, err := RestoreShard(a.AppendSnapshot(nil), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2000; i < len(cmds); i++ {
		ra, rb := make([]Result, 1), make([]Result, 1)
		a.Apply(times[i], cmds[i:i+1], ra)
		b.Apply(times[i], cmds[i:i+1], rb)
		if !sameResult(ra[0], rb[0]) {
			t.Fatalf("step %d: %+v vs %+v", i, ra[0], rb[0])
		}
	}
	if a.Stats().Evicted == 0 {
		t.Fatal("the workload evicted nothing: the test proves nothing")
	}
	if !bytes.Equal(a.AppendSnapshot(nil), b.AppendSnapshot(nil)) {
		t.Fatal("the restored replica diverged")
	}
}
