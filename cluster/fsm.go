package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// shardFSM is this node's replica of one shard as a Raft state machine.
// Raft calls it on one goroutine of its own (ApplyBatch, Snapshot and
// Restore alike); this node's readers look at the state between entries
// (replica.mu).
type shardFSM struct {
	replica
	cmds []engine.Command // decoding scratch
	// claims says which entries a proposer here waits for; the results of
	// the others go to scratch.
	claims  resultClaims
	scratch []engine.Result
	// halted is set by an entry only a newer rlserver can apply: from then
	// on the replica applies nothing and takes no snapshot, and halt is
	// told, so that the process stops rather than let its state diverge.
	halted error
	halt   chan<- error
	log    *slog.Logger // says what each snapshot cost; nil: nothing
	// grown is what the log gained since the last snapshot, which paces
	// the next (snapshotpace.go).
	grown logGrowth
}

func newShardFSM(index int, observer *observerSlot, halt chan<- error, scripts engine.ScriptRunner) *shardFSM {
	return &shardFSM{replica: newReplica(index, observer, scripts), halt: halt}
}

// Apply applies one entry; Raft calls ApplyBatch instead when it can.
func (f *shardFSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order. A command entry that its
// proposer claimed (resultClaims) has the claim for its response, its
// results written into the proposer's buffer; the others' results are
// dropped. An entry that does not decode is refused alike by every
// replica, so they stay in agreement.
func (f *shardFSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		f.grown.applied(len(l.Data))
		if f.halted != nil {
			out[i] = f.halted
			continue
		}
		us, cmds, err := decodeBatch(l.Data, f.cmds[:0])
		f.cmds = cmds[:0]
		if errors.Is(err, ErrNewerEntry) {
			f.halted = fmt.Errorf("shard %d, entry %d: %w", f.index, l.Index, err)
			out[i] = f.halted
			select {
			case f.halt <- f.halted:
			default: // another shard said so first
			}
			continue
		}
		if err != nil {
			out[i] = err
			continue
		}
		apply := func(results []engine.Result) { f.apply(us, cmds, results) }
		if rc := f.claims.fill(l.Data, len(cmds), &f.scratch, apply); rc != nil {
			out[i] = rc
		}
	}
	clear(f.cmds[:cap(f.cmds)]) // do not keep entries' memory alive through the keys
	return out
}

// Snapshot freezes the state (capture.go); Raft encodes it with Persist,
// on a goroutine of its own, while later batches apply.
func (f *shardFSM) Snapshot() (raft.FSMSnapshot, error) {
	if f.halted != nil {
		return nil, f.halted // its state is not the state at the applied index
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grown.taken()
	return &fsmSnapshot{capture: f.startCapture(), log: f.log, grown: &f.grown}, nil
}

// Restore replaces the whole state with a snapshot's.
func (f *shardFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	payload, format, err := persistence.ReadSnapshot(rc)
	if err != nil {
		return err
	}
	shard, err := engine.RestoreShard(payload, int(format))
	if err != nil {
		return err
	}
	shard.SetScripts(f.scripts)
	f.mu.Lock()
	f.shard = shard // its counters start again from zero, as INFO's do
	f.mu.Unlock()
	f.grown.taken()
	f.grown.snapshot.Store(uint64(len(payload)))
	// Any key may have changed, and no write command says which.
	f.observer.flushed(f.index)
	return nil
}

type fsmSnapshot struct {
	capture *capture
	log     *slog.Logger
	grown   *logGrowth // told the snapshot's size once written
}

// Persist writes the snapshot frame to the sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.capture.writeFrame(sink); err != nil {
		sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	s.grown.snapshot.Store(uint64(s.capture.size))
	return nil
}

// Release ends the capture: Raft calls it once done with the snapshot,
// written or not.
func (s *fsmSnapshot) Release() { s.capture.end(s.log, "shard snapshot written") }
