package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/internal/wire"
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
		snap := a.AppendSnapshot(nil)
		// Sized exactly before it is encoded (every kind of key is here).
		if want := captureSize(a); len(snap) != want {
			t.Fatalf("seed %d: a snapshot of %d bytes sized for %d", seed, len(snap), want)
		}
		b, err := RestoreShard(snap, SnapshotFormat)
		if err != nil {
			t.Fatalf("seed %d: restore: %v", seed, err)
		}
		if a.digest() != b.digest() || a.now != b.now {
			t.Fatalf("seed %d: restored state differs", seed)
		}
		// Record for record: the same layout, free list and cursors.
		if !bytes.Equal(b.AppendSnapshot(nil), snap) {
			t.Fatalf("seed %d: the restored shard's snapshot differs", seed)
		}
		// The restored shard answers the rest exactly as the original does.
		ra, rb := make([]Result, 1), make([]Result, 1)
		for i := half; i < len(cmds); i++ {
			a.Apply(times[i], cmds[i:i+1], ra)
			b.Apply(times[i], cmds[i:i+1], rb)
			if !sameResult(ra[0], rb[0]) {
				t.Fatalf("seed %d step %d: %+v vs %+v", seed, i, ra[0], rb[0])
			}
		}
		if a.digest() != b.digest() || !bytes.Equal(a.AppendSnapshot(nil), b.AppendSnapshot(nil)) {
			t.Fatalf("seed %d: states diverged after restore", seed)
		}
		checkCounters(t, b)
	}
}

// Snapshots written before sections existed (format 1: the live keys only)
// still restore.
func TestRestoreFormatOne(t *testing.T) {
	s := NewShard()
	decision(t, s, 1_000_000, OpSliding, "a", 5, 60_000, 0, 2)
	decision(t, s, 1_000_000, OpToken, "b", 5, 1, 1000, 1)
	// Format 1: clock, key count, entries.
	old := binary.AppendVarint(nil, s.now)
	old = binary.AppendUvarint(old, 2)
	old = appendEntry(old, &s.keys, 0, s.now)
	old = appendEntry(old, &s.keys, 1, s.now)
	r, err := RestoreShard(old, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.digest() != s.digest() {
		t.Fatal("format 1 restore differs")
	}
	if _, err := RestoreShard(old, SnapshotFormat); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("format 1 bytes read as format 2: %v", err)
	}
	if _, err := RestoreShard(s.AppendSnapshot(nil), 1); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("format 2 bytes read as format 1: %v", err)
	}
}

func TestRestoreRejectsDamage(t *testing.T) {
	s := NewShard()
	for i, op := range []Op{OpSliding, OpLog, OpToken, OpThrottle} {
		apply(s, 1_700_000_000_000, op, string(rune('a'+i)), 5, 1, 1, 1)
	}
	for _, h := range []string{"x", "y"} {
		q := shareReq(h, 5, 1000)
		run(s, 1_700_000_000_000, q.Command([]byte("share")))
	}
	good := s.AppendSnapshot(nil)
	if _, err := RestoreShard(good, SnapshotFormat); err != nil {
		t.Fatal(err)
	}
	for cut := range len(good) {
		if _, err := RestoreShard(good[:cut], SnapshotFormat); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("truncated at %d of %d: %v", cut, len(good), err)
		}
	}
	if _, err := RestoreShard(append(good, 0), SnapshotFormat); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatal("trailing byte accepted")
	}
}

func FuzzRestoreShard(f *testing.F) {
	s := NewShard()
	for i, op := range []Op{OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpThrottle} {
		apply(s, 1_700_000_000_000, op, string(rune('a'+i)), 5, 1, 1, 1)
	}
	for _, h := range []string{"x", "y"} {
		q := shareReq(h, 5, 1000)
		run(s, 1_700_000_000_000, q.Command([]byte("share")))
	}
	globalSeeds(s, 1_700_000_000_000)
	run(s, 1_700_000_000_000, forced(OpToken, "debt", 5, 1, 1000, 9))
	_, seq := reserved(&testing.T{}, s, 1_700_000_000_001, reserveCmd(OpFixed, "r", []int64{5, 1000}, 2, 5000))
	reserved(&testing.T{}, s, 1_700_000_000_001, reserveCmd(OpShape, "r2", []int64{5, 1, 1000}, 2, 5000))
	run(s, 1_700_000_000_002, settleCmd("r", seq, 4))
	f.Add(s.AppendSnapshot(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if old, err := RestoreShard(b, 1); err == nil {
			// What format 1 accepts, format 2 writes and reads back.
			if _, err := RestoreShard(old.AppendSnapshot(nil), SnapshotFormat); err != nil {
				t.Fatalf("a format 1 shard re-encoded fails: %v", err)
			}
		}
		r, err := RestoreShard(b, SnapshotFormat)
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
			r.Apply(r.now, []Command{settleCmd(string(key), 1_700_000_000_001<<leaseIDShift, 3),
				reserveCmd(OpToken, string(key), []int64{5, 1, 1000}, 2, 10)}, make([]Result, 2))
			q := shareReq("x", 5, 1000)
			q.Ack = 1
			r.Apply(r.now, []Command{q.Command(key), {Op: OpUnshare, Key: key, Value: []byte("y")}}, make([]Result, 2))
			r.Apply(r.now+1, globalCommands(key), make([]Result, len(globalCommands(key))))
		}
		if _, err := RestoreShard(r.AppendSnapshot(nil), SnapshotFormat); err != nil {
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

// A snapshot is sized exactly before it is encoded, whatever its keys hold:
// long keys, logs, values, hashes and lists as well as plain limiters.
func TestSnapshotSizedExactly(t *testing.T) {
	s := NewShard()
	long := "long:" + string(bytes.Repeat([]byte("k"), 300))
	results := run(s, 1_700_000_000_000,
		cmd(OpSliding, "user:1", 100, 60_000, 0, 1),
		cmd(OpSliding, long, 100, 60_000, 0, 1),
		cmd(OpLog, "log", 10, 60_000, 0, 3),
		cmd(OpLog, long+"log", 10, 60_000, 0, 1),
		cmd(OpToken, "tok", 10, 1, 1_000, 1),
		Command{Op: OpSet, Key: []byte("s"), Value: []byte("not a number")},
		Command{Op: OpSet, Key: []byte("n"), Value: []byte("-12345678901")},
		vcmd(OpHSet, 0, "h", "a", "1", "b", "2"),
		vcmd(OpPush, FlagRight, long+"list", "x", "y", "z"),
		cmd(OpDel, "user:1"),
		func() Command { q := shareReq("envoy-1", 1000, 1000); return q.Command([]byte("share")) }(),
		func() Command { q := shareReq("envoy-2", 1000, 1000); q.Demand = 7; return q.Command([]byte("share")) }(),
	)
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("command %d: %v", i, r.Err)
		}
	}
	if s.Stats().Keys != 9 {
		t.Fatalf("%d keys", s.Stats().Keys)
	}
	snap := s.AppendSnapshot(nil)
	if want := captureSize(s); len(snap) != want {
		t.Fatalf("a snapshot of %d bytes sized for %d", len(snap), want)
	}
	if _, err := RestoreShard(snap, SnapshotFormat); err != nil {
		t.Fatal(err)
	}
}

// A share key's holders and grants survive a snapshot exactly: the
// restored shard grants what the original would, never again what was
// granted before. A kind this release does not know is refused, as a
// release before share keys refuses theirs: never misread.
func TestSnapshotKeepsShares(t *testing.T) {
	s := NewShard()
	const now = 1_700_000_000_000
	a := shareReq("a", 1000, 1000)
	first := share(t, s, now, "k", a)
	share(t, s, now, "k", shareReq("b", 1000, 1000))
	a.Demand, a.Ack = 100, first.seq
	share(t, s, now+5, "k", a)
	snap := s.AppendSnapshot(nil)
	r, err := RestoreShard(snap, SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	checkCounters(t, r)
	if r.digest() != s.digest() || r.Stats().Charged != s.Stats().Charged {
		t.Fatal("restored shard differs")
	}
	for _, sh := range []*Shard{s, r} {
		if got := share(t, sh, now+6, "k", shareReq("b", 1000, 1000)); got.rate != 0 || got.fair != 900 {
			t.Fatalf("b after a's unacknowledged grant: %+v", got) // a still holds 1000 until it acknowledges its 100
		}
	}
	i := s.keys.find([]byte("k"))
	entry := appendEntry(nil, &s.keys, i, s.now)
	entry[0] = byte(kindCount)
	bad := append(append(wire.AppendVarint(nil, s.now), 1), entry...)
	if _, err := RestoreShard(append(bad, s.appendLayout(nil)...), SnapshotFormat); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("an unknown kind: %v", err)
	}
}

// captureSize is the size a capture of s gives its snapshot, reckoned
// before it is encoded.
func captureSize(s *Shard) int {
	c := s.Capture()
	defer s.EndCapture(c)
	return c.Size()
}

// Reservations survive a snapshot exactly: pending ones settle on the
// restored shard as on the original, settled ones answer their first
// outcome, and the seqs go on from the last. A release before reservations
// refuses the section (an unknown one), never misreads it.
func TestSnapshotKeepsReservations(t *testing.T) {
	s := NewShard()
	const now = 1_700_000_000_000
	token := []int64{1000, 1000, 60_000}
	_, settled := reserved(t, s, now, reserveCmd(OpToken, "k", token, 100, 60_000))
	_, pending := reserved(t, s, now, reserveCmd(OpToken, "k", token, 50, 60_000))
	_, expired := reserved(t, s, now, reserveCmd(OpFixed, "f", []int64{10, 1000}, 3, 10))
	first := run(s, now+5, settleCmd("k", settled, 300))[0]
	snap := s.AppendSnapshot(nil)
	at := len(snap) - len(s.appendSettings(nil)) // the reservations, the only setting
	r, err := RestoreShard(snap, SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	if r.digest() != s.digest() || r.Stats().Charged != s.Stats().Charged || !bytes.Equal(r.AppendSnapshot(nil), snap) {
		t.Fatal("restored shard differs")
	}
	for _, sh := range []*Shard{s, r} {
		out := run(sh, now+20, settleCmd("k", settled, 1), settleCmd("k", pending, 0), settleCmd("f", expired, 0))
		if out[0].Decision != first.Decision || out[1].Type != ResDecision || !errors.Is(out[2].Err, ErrReservationExpired) {
			t.Fatalf("%+v", out)
		}
		if _, seq := reserved(t, sh, now+20, reserveCmd(OpToken, "k", token, 1, 60_000)); seq <= pending {
			t.Fatalf("seq %d after %d", seq, pending)
		}
	}
	if r.digest() != s.digest() {
		t.Fatal("diverged")
	}
	old := bytes.Clone(snap)
	if old[at] != sectionReservations {
		t.Fatalf("section %q at %d", old[at], at)
	}
	old[at] = 'Q' // a section this release does not know
	if _, err := RestoreShard(old, SnapshotFormat); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("an unknown section: %v", err)
	}
}

// TestRestoreRejectsAKeyTwice checks the duplicate check of a restore,
// which indexes each key restoreAhead keys after its record
// (restoreindex.go): a key held twice fails the restore whether its two
// entries are adjacent, within the window, at its edges, beyond it, or
// the last two; the same entries without the duplicate restore, every key
// found. Keys inline in their records and long ones (kept beside them).
func TestRestoreRejectsAKeyTwice(t *testing.T) {
	for _, name := range []string{"k%02d", "a-key-longer-than-a-record-holds-inline:%02d"} {
		t.Run(name, func(t *testing.T) { testRestoreRejectsAKeyTwice(t, name) })
	}
}

func testRestoreRejectsAKeyTwice(t *testing.T, name string) {
	s := NewShard()
	const now, keys = 1_700_000_000_000, 60
	for i := range keys {
		apply(s, now, OpSliding, fmt.Sprintf(name, i), 5, 1000, 0, 1)
	}
	entries := make([][]byte, keys)
	for i := range keys {
		entries[i] = appendEntry(nil, &s.keys, s.keys.find(fmt.Appendf(nil, name, i)), s.now)
	}
	snapshot := func(es [][]byte) []byte {
		b := wire.AppendUvarint(wire.AppendVarint(nil, s.now), uint64(len(es)))
		for _, e := range es {
			b = append(b, e...)
		}
		return append(b, s.appendLayout(nil)...)
	}
	r, err := RestoreShard(snapshot(entries), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if r.keys.find(fmt.Appendf(nil, name, i)) < 0 {
			t.Fatalf("%s not found after the restore", fmt.Sprintf(name, i))
		}
	}
	for _, c := range []struct{ first, again int }{
		{0, 1}, {0, restoreAhead - 1}, {0, restoreAhead}, {0, restoreAhead + 1}, {0, 40}, {keys - 2, keys - 1},
	} {
		es := slices.Clone(entries)
		es[c.again] = entries[c.first]
		if _, err := RestoreShard(snapshot(es), SnapshotFormat); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s at %d and %d: %v", fmt.Sprintf(name, c.first), c.first, c.again, err)
		}
	}
}
