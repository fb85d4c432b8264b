package engine

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// captureCommands are randomCommands spread over enough keys to fill
// a dozen chunks (a third of the commands are for keys that live an hour),
// a third of the keys longer than inlineKey (kept in extras),
// with hashes, lists, RENAME and, when flush is set, a rare FLUSHALL mixed
// in, under a memory limit they reach, so that keys are evicted. A third
// of them come in the same millisecond as the one before, when a log's
// last entry is added to in place.
func captureCommands(seed uint64, n int, flush bool) ([]int64, []Command) {
	times, cmds := randomCommands(seed, n)
	rng := rand.New(rand.NewPCG(seed, 9))
	for i := 1; i < len(times); i++ {
		if rng.IntN(3) == 0 {
			times[i] = times[i-1]
		} else {
			times[i] = max(times[i], times[i-1])
		}
	}
	key := func() string {
		k := rng.IntN(20_000)
		if k%3 == 0 {
			return "a key long enough to be kept outside its record:" + strconv.Itoa(k)
		}
		return "k" + strconv.Itoa(k)
	}
	for i := range cmds {
		c := &cmds[i]
		c.Key = []byte(key())
		switch rng.IntN(36) {
		case 0:
			*c = vcmd(OpHSet, 0, string(c.Key), "f"+strconv.Itoa(rng.IntN(4)), strconv.Itoa(rng.IntN(100)))
		case 1:
			*c = vcmd(OpHDel, 0, string(c.Key), "f"+strconv.Itoa(rng.IntN(4)))
		case 2:
			*c = Command{Op: OpHIncrBy, Key: c.Key, Value: []byte("f1"), Args: [4]int64{rng.Int64N(9) - 4}}
		case 3:
			*c = vcmd(OpPush, Flags(rng.IntN(2))*FlagRight, string(c.Key), "x", strconv.Itoa(rng.IntN(100)))
		case 4:
			*c = Command{Op: OpPop, Flags: Flags(rng.IntN(2)) * FlagRight, Key: c.Key}
		case 5:
			*c = Command{Op: OpRename, Key: c.Key, Value: []byte(key())}
		case 6:
			if flush && rng.IntN(40) == 0 {
				*c = Command{Op: OpFlush}
			}
		case 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18: // keys that live long enough to fill chunks
			*c = Command{Op: OpSliding, Key: c.Key, Args: [4]int64{100, 3_600_000, 0, 1}}
		}
	}
	limit := Command{Op: OpMemoryLimit, Args: [4]int64{250_000, int64(VolatileTTL)}}
	return append([]int64{times[0]}, times...), append([]Command{limit}, cmds...)
}

// inFlight is a capture being encoded, beside what it must give.
type inFlight struct {
	c            *Capture
	got, want    []byte
	digest       string
	reportsDone  bool // tells the shard how far it has encoded
	partsPerStep int
	fillPerStep  int // chunks FillCapture takes a step; 0: all at once
	sized        bool
}

// A capture encodes the state as it was when it was taken, whatever the
// shard applies while it is encoded part by part in between (up to two
// captures at a time, taken at random instants, some in the same
// millisecond as the commands after them); each restores to a shard with
// the digest the state had; and the shard's own state is what a shard
// that took no capture reaches.
func TestCaptureWhileWriting(t *testing.T) {
	for seed := range uint64(40) {
		times, cmds := captureCommands(seed, 8000, seed%4 == 3)
		rng := rand.New(rand.NewPCG(seed, 10))
		s, control := NewShard(), NewShard()
		var flying []*inFlight
		checked := 0
		out := make([]Result, 1)
		for i := range cmds {
			s.Apply(times[i], cmds[i:i+1], out)
			control.Apply(times[i], cmds[i:i+1], out)
			if len(flying) < 2 && rng.IntN(400) == 0 {
				f := &inFlight{want: s.AppendSnapshot(nil), digest: s.digest(), reportsDone: rng.IntN(2) == 0, partsPerStep: rng.IntN(3), fillPerStep: rng.IntN(3)}
				if f.fillPerStep == 0 {
					f.c = s.Capture()
				} else {
					f.c = s.CaptureInSteps()
				}
				flying = append(flying, f)
			}
			for _, f := range flying {
				if !s.FillCapture(f.c, f.fillPerStep) {
					continue
				}
				if !f.sized {
					if f.c.Size() != len(f.want) {
						t.Fatalf("seed %d: a capture sized %d, its snapshot %d", seed, f.c.Size(), len(f.want))
					}
					f.sized = true
				}
				for range f.partsPerStep {
					f.got = f.c.AppendNext(f.got)
				}
				if f.reportsDone {
					s.CaptureProgress(f.c, f.c.Encoded())
				}
			}
			flying = slices.DeleteFunc(flying, func(f *inFlight) bool {
				if f.c.Encoded() < f.c.Parts() && i < len(cmds)-1 {
					return false
				}
				s.FillCapture(f.c, len(f.c.src))
				for f.c.Encoded() < f.c.Parts() {
					f.got = f.c.AppendNext(f.got)
				}
				s.EndCapture(f.c)
				checkCapture(t, seed, f)
				checked++
				return true
			})
		}
		if checked == 0 {
			t.Fatalf("seed %d: no capture taken", seed)
		}
		if !bytes.Equal(s.AppendSnapshot(nil), control.AppendSnapshot(nil)) || s.digest() != control.digest() {
			t.Fatalf("seed %d: the shard that was captured diverged from one that was not", seed)
		}
		checkCounters(t, s)
		if s.keys.records.cow.active() || s.keys.params.hold {
			t.Fatalf("seed %d: captures ended, but the shard still keeps for them", seed)
		}
	}
}

// checkCapture fails the test unless f encoded what it had to, and that
// restores to a shard of the digest the state had.
func checkCapture(t *testing.T, seed uint64, f *inFlight) {
	t.Helper()
	if !bytes.Equal(f.got, f.want) {
		t.Fatalf("seed %d: the capture encoded %d bytes that differ from the %d at its instant", seed, len(f.got), len(f.want))
	}
	r, err := RestoreShard(f.got, SnapshotFormat)
	if err != nil {
		t.Fatalf("seed %d: restore: %v", seed, err)
	}
	if r.digest() != f.digest {
		t.Fatalf("seed %d: restored digest differs", seed)
	}
}

// A capture copies a chunk the first time the shard writes to it, once;
// chunks the capture has encoded already, and new ones, are not copied;
// the original of a chunk copied and then encoded is the next copy's.
func TestCaptureCopiesAChunkOnce(t *testing.T) {
	s := NewShard()
	for k := range 4 * chunkRecords {
		decision(t, s, 1000, OpSliding, "k"+strconv.Itoa(k), 100, 60_000, 0, 1)
	}
	write := func(k int) { decision(t, s, 1001, OpSliding, "k"+strconv.Itoa(k), 100, 60_000, 0, 1) }
	c := s.Capture()
	if chunks := len(s.keys.records.chunks); c.CopyBound() != int64(chunks)*ChunkBytes {
		t.Fatalf("a capture of %d chunks, none spare, may copy %d bytes", chunks, c.CopyBound())
	}
	copies := func() int64 { return s.keys.records.cow.copies }
	original := s.keys.records.chunks[0]
	write(0)
	write(1)
	if copies() != 1 || s.keys.records.chunks[0] == original {
		t.Fatalf("%d copies after two writes to chunk 0", copies())
	}
	c.AppendNext(nil)
	c.AppendNext(nil)
	s.CaptureProgress(c, c.Encoded())
	write(chunkRecords) // chunk 1, encoded
	s.Apply(1001, []Command{{Op: OpSliding, Key: []byte("new"), Args: [4]int64{100, 60_000, 0, 1}}}, make([]Result, 1))
	if copies() != 1 {
		t.Fatalf("%d copies after writes to an encoded chunk and a new one", copies())
	}
	write(3 * chunkRecords)
	if copies() != 2 || s.keys.records.chunks[3] != original {
		t.Fatalf("%d copies after a write to chunk 3; its copy is chunk 0's original: %v", copies(), s.keys.records.chunks[3] == original)
	}
	s.EndCapture(c) // chunk 3's original is spare, and one of 5 chunks is a quarter's worth
	write(2 * chunkRecords)
	if copies() != 2 || len(s.keys.records.cow.spare) != 1 {
		t.Fatalf("%d copies after the capture ended, %d spare chunks kept", copies(), len(s.keys.records.cow.spare))
	}
	spare := s.keys.records.cow.spare[0]
	c = s.Capture()
	if chunks := len(s.keys.records.chunks); c.CopyBound() != int64(chunks-1)*ChunkBytes {
		t.Fatalf("a capture of %d chunks, one spare, may copy %d bytes", chunks, c.CopyBound())
	}
	write(2 * chunkRecords)
	if s.keys.records.chunks[2] != spare {
		t.Fatal("the next capture's first copy is not made into the spare chunk")
	}
	s.EndCapture(c)
}

// A capture of an empty shard is its snapshot.
func TestCaptureEmpty(t *testing.T) {
	s := NewShard()
	want := s.AppendSnapshot(nil)
	c := s.Capture()
	defer s.EndCapture(c)
	if c.Parts() != 1 || c.Size() != len(want) {
		t.Fatalf("%d parts, size %d for %d bytes", c.Parts(), c.Size(), len(want))
	}
	if got := c.AppendNext(nil); !bytes.Equal(got, want) || c.AppendNext(nil) != nil {
		t.Fatalf("got %x, want %x", got, want)
	}
}

// A log's last entry, added to in place by a decision in its millisecond,
// is the capture's as it was: a command copies what it finds before
// reading it to change it.
func TestCaptureKeepsALogChangedInPlace(t *testing.T) {
	s := NewShard()
	decision(t, s, 1000, OpLog, "log", 10, 60_000, 0, 1)
	decision(t, s, 1000, OpLog, "log", 10, 60_000, 0, 1)
	want := s.AppendSnapshot(nil)
	c := s.Capture()
	defer s.EndCapture(c)
	decision(t, s, 1000, OpLog, "log", 10, 60_000, 0, 3)
	if got := c.AppendNext(nil); !bytes.Equal(got, want) {
		t.Fatalf("the capture encoded %x, the state at its instant %x", got, want)
	}
}

// A capture keeps the global keys as they were when it was taken: their
// side state, which the shard changes in place, and the records a relaxed
// key's decisions write; the shard goes on with the same keys meanwhile.
func TestCaptureKeepsGlobalKeys(t *testing.T) {
	s := NewShard()
	const now = 1_700_000_040_000
	globalSeeds(s, now)
	f := &inFlight{want: s.AppendSnapshot(nil), digest: s.digest()}
	f.c = s.Capture()
	// The first write to the keys' chunk since: a relaxed decision.
	run(s, now+10, Command{Op: OpFixed, Key: []byte("rk"), Flags: FlagGlobal | FlagRelaxed, Args: [4]int64{100, 60_000, 0, 1}})
	globalSeeds(s, now+10)
	for _, key := range []string{"gk", "rk"} {
		run(s, now+20, globalCommands([]byte(key))...)
	}
	if bytes.Equal(s.AppendSnapshot(nil), f.want) {
		t.Fatal("the shard did not change while captured")
	}
	for f.c.Encoded() < f.c.Parts() {
		f.got = f.c.AppendNext(f.got)
	}
	s.EndCapture(f.c)
	checkCapture(t, 0, f)
}
