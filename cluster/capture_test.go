package cluster

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// memorySink is a raft.SnapshotSink into memory. Its writes wait until
// gate is closed.
type memorySink struct {
	bytes.Buffer
	gate              chan struct{}
	closed, cancelled bool
}

func (s *memorySink) Write(p []byte) (int, error) {
	<-s.gate
	return s.Buffer.Write(p)
}

func (s *memorySink) ID() string    { return "memory" }
func (s *memorySink) Close() error  { s.closed = true; return nil }
func (s *memorySink) Cancel() error { s.cancelled = true; return nil }

// randomEntry is a log entry of a batch of decisions over many keys, some
// too long to be kept in their records, at now.
func randomEntry(rng *rand.Rand, now int64) *raft.Log {
	req := &Request{}
	for range 200 {
		key := fmt.Sprintf("user:%d", rng.IntN(20_000))
		if rng.IntN(4) == 0 {
			key = fmt.Sprintf("a key too long to be kept in its record:%d", rng.IntN(5_000))
		}
		op := []engine.Op{engine.OpSliding, engine.OpLog, engine.OpToken}[rng.IntN(3)]
		req.Cmds = append(req.Cmds, engine.Command{Op: op, Key: []byte(key), Args: [4]int64{10, 60_000, 60_000, 1}})
	}
	return &raft.Log{Type: raft.LogCommand, Data: appendBatch(nil, now, []*Request{req})}
}

// A snapshot Raft takes while entries go on applying (Snapshot on the
// FSM's goroutine, Persist on another, as hashicorp/raft does) holds the
// state at the entry it was taken after, and restores to that state's
// digest, its chunk pointers taken a few at a time while entries apply
// (so that chunks are written before their turn); and room for its chunk
// copies is reserved for the collector's pacer until it is released. Run
// with -race, it also shows that Persist reads nothing the applies write.
func TestSnapshotHoldsItsIndexWhileEntriesApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	f := newShardFSM(0, &observerSlot{}, nil, nil)
	now := int64(1_700_000_000_000)
	for range 100 {
		now += int64(rng.IntN(3))
		f.ApplyBatch([]*raft.Log{randomEntry(rng, now)})
	}
	want := f.shard.AppendSnapshot(nil)
	digest := f.inspect(engine.Command{Op: engine.OpDigest}).Text

	reserved := CaptureCopyBound() // none, unless a node another test left is snapshotting
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snap.(*fsmSnapshot).capture.step = 3
	// The pacer leaves room for its copies until it is released.
	if bound := snap.(*fsmSnapshot).capture.c.CopyBound(); bound == 0 || CaptureCopyBound() != reserved+uint64(bound) {
		t.Fatalf("a capture of %d bytes of copies at most, %d reserved beside %d", bound, CaptureCopyBound(), reserved)
	}
	sink := &memorySink{gate: make(chan struct{})}
	persisted := make(chan error, 1)
	go func() { persisted <- snap.Persist(sink) }()
	applied := 0 // entries applied while the snapshot was written; the first 20 before it starts
	for ; applied < 20; applied++ {
		now += int64(rng.IntN(3))
		f.ApplyBatch([]*raft.Log{randomEntry(rng, now)})
	}
	close(sink.gate)
	deadline := time.After(time.Minute)
	for done := false; !done; {
		select {
		case err := <-persisted:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-deadline:
			t.Fatal("the snapshot was not written within a minute")
		default:
			now += int64(rng.IntN(3))
			f.ApplyBatch([]*raft.Log{randomEntry(rng, now)})
			applied++
		}
	}
	snap.Release()
	if CaptureCopyBound() != reserved {
		t.Fatalf("%d bytes reserved for copies after the snapshot's release, %d before it", CaptureCopyBound(), reserved)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed %v, cancelled %v", sink.closed, sink.cancelled)
	}
	payload, _, err := persistence.ReadSnapshot(bytes.NewReader(sink.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(payload, want) {
		t.Fatalf("the snapshot (%d bytes, %d entries applied while it was written) is not the state it was taken at (%d bytes)", len(payload), applied, len(want))
	}
	restored := newShardFSM(0, &observerSlot{}, nil, nil)
	if err := restored.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := restored.inspect(engine.Command{Op: engine.OpDigest}).Text; got != digest {
		t.Fatalf("restored digest %s, the state's %s", got, digest)
	}
	t.Logf("%d entries applied while the snapshot was written", applied)
	if len(f.captures) != 0 {
		t.Fatalf("%d captures left after Release", len(f.captures))
	}
}
