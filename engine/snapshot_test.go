package engine

import (
	"bytes"
	"errors"
	"testing"
)

func TestSnapshotRoundTripKeepsStateAndAnswers(t *testing.T) {
	for seed := range uint64(20) {
		times, cmds := randomCommands(seed, 3000)
		a := NewShard()
		out := make([]Result, 1)
		half := len(cmds) / 2
		for i := range cmds[:half] {
			a.Apply(times[i], cmds[i:i+1], out)
		}
		b, err := RestoreShard(a.AppendSnapshot(nil))
		if err != nil {
			t.Fatalf("seed %d: restore: %v", seed, err)
		}
		if a.digest() != b.digest() || a.now != b.now {
			t.Fatalf("seed %d: restored state differs", seed)
		}
		// The restored shard answers the rest exactly as the original does.
		ra, rb := make([]Result, 1), make([]Result, 1)
		for i := half; i < len(cmds); i++ {
			a.Apply(times[i], cmds[i:i+1], ra)
			b.Apply(times[i], cmds[i:i+1], rb)
			if cmds[i].Op != OpSweep && !sameResult(ra[0], rb[0]) {
				t.Fatalf("seed %d step %d: %+v vs %+v", seed, i, ra[0], rb[0])
			}
		}
		if a.digest() != b.digest() {
			t.Fatalf("seed %d: states diverged after restore", seed)
		}
	}
}

func TestRestoreRejectsDamage(t *testing.T) {
	s := NewShard()
	for i, op := range []Op{OpSliding, OpLog, OpToken, OpThrottle} {
		apply(s, 1_700_000_000_000, op, string(rune('a'+i)), 5, 1, 1, 1)
	}
	good := s.AppendSnapshot(nil)
	if _, err := RestoreShard(good); err != nil {
		t.Fatal(err)
	}
	for cut := range len(good) {
		if _, err := RestoreShard(good[:cut]); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("truncated at %d of %d: %v", cut, len(good), err)
		}
	}
	if _, err := RestoreShard(append(good, 0)); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatal("trailing byte accepted")
	}
}

func FuzzRestoreShard(f *testing.F) {
	s := NewShard()
	for i, op := range []Op{OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpThrottle} {
		apply(s, 1_700_000_000_000, op, string(rune('a'+i)), 5, 1, 1, 1)
	}
	f.Add(s.AppendSnapshot(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := RestoreShard(b)
		if err != nil {
			return
		}
		// Whatever decodes must behave: every command on every key is safe.
		out := make([]Result, 1)
		for _, i := range r.liveRecords() {
			key := bytes.Clone(r.keys.key(i))
			for op := OpSliding; op <= OpInfo; op++ {
				c := Command{Op: op, Key: key, Args: [4]int64{3, 1, 1000, 1}}
				if !c.Valid() {
					continue
				}
				r.Apply(r.now+int64(op)*7, []Command{c}, out)
				if out[0].Type == ResDecision {
					checkSane(t, "restored", out[0].Decision)
				}
			}
		}
		if _, err := RestoreShard(r.AppendSnapshot(nil)); err != nil {
			t.Fatalf("re-encoding a restored shard fails: %v", err)
		}
	})
}

func TestInspectChangesNothing(t *testing.T) {
	times, cmds := randomCommands(7, 500)
	s := NewShard()
	for i := range cmds {
		s.Apply(times[i], cmds[i:i+1], make([]Result, 1))
	}
	before, clock := s.AppendSnapshot(nil), s.now
	for _, op := range []Op{OpDBSize, OpScan, OpDigest} {
		if r := s.Inspect(&Command{Op: op, Args: [4]int64{0, 100}}); r.Type == ResError {
			t.Fatalf("%v: %v", op, r.Err)
		}
	}
	if string(s.AppendSnapshot(nil)) != string(before) || s.now != clock {
		t.Fatal("Inspect changed the shard")
	}
}
