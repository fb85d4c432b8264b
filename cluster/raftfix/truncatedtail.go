package raftfix

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// A follower whose log conflicts with its leader's deletes the conflicting
// suffix (DeleteRange) and then stores the leader's entries. When that store
// fails (a full disk), hashicorp/raft returns with its own idea of its last
// entry left where it was (raft.go: "TODO: leaving r.getLastLog() in the
// wrong state if there was a truncation above"): it believes it still holds
// entries the store no longer has. Every later append that reaches them
// reads one, finds nothing ("failed to get log entry"), and is refused, so
// the replica never catches up again until it restarts, even once the disk
// has room (tests/faults_test.go's full disk met it in CI: a replica that
// stayed behind its shard for good).
//
// truncatedTail keeps the entries a suffix deletion removed readable, from
// memory, until a store succeeds. Raft then finds where it looks the very
// entries it believes it holds, sees again that they conflict with the
// leader's, deletes them again and stores again, which succeeds once the
// disk has room. Nothing is applied from them: they conflict with the
// leader's log, so no append verifies them, and a follower's commit index
// never passes what an append verified (verifiedcommit.go). A restart
// forgets them, as the store has.
//
// Upstream: hashicorp/raft#163, "Panic on storage failures" (closed), asked
// to resolve this TODO; it is still in raft.go, appendEntries, in v1.7.3 and
// v1.8.0.
// Canary: TestCanaryFollowerRefusesAppendsAfterAFailedStore.
type truncatedTail struct {
	raft.LogStore
	mu   sync.Mutex
	tail map[uint64]*raft.Log // the entries deleted since the last store that succeeded
}

// keepTruncatedTail wraps logs (see truncatedTail).
func keepTruncatedTail(logs raft.LogStore) raft.LogStore {
	return &truncatedTail{LogStore: logs}
}

// DeleteRange deletes the entries from min to max, keeping them readable
// when they are the log's end (a conflict's truncation) and not its whole
// (a compaction, or a snapshot installed over everything, starts at the
// first entry).
func (t *truncatedTail) DeleteRange(min, max uint64) error {
	first, err := t.LogStore.FirstIndex()
	if err != nil {
		return err
	}
	last, err := t.LogStore.LastIndex()
	if err != nil {
		return err
	}
	var kept []*raft.Log
	if min > first && max >= last {
		for i := min; i <= last; i++ {
			l := new(raft.Log)
			if t.LogStore.GetLog(i, l) == nil { // one that cannot be read is not kept
				kept = append(kept, l)
			}
		}
	}
	if err := t.LogStore.DeleteRange(min, max); err != nil {
		return err
	}
	if len(kept) > 0 {
		t.mu.Lock()
		if t.tail == nil {
			t.tail = make(map[uint64]*raft.Log, len(kept))
		}
		for _, l := range kept {
			t.tail[l.Index] = l
		}
		t.mu.Unlock()
	}
	return nil
}

// GetLog reads an entry from the store, or from the truncated tail when the
// store has none at index.
func (t *truncatedTail) GetLog(index uint64, l *raft.Log) error {
	err := t.LogStore.GetLog(index, l)
	if errors.Is(err, raft.ErrLogNotFound) {
		t.mu.Lock()
		kept, ok := t.tail[index]
		t.mu.Unlock()
		if ok {
			*l = *kept
			return nil
		}
	}
	return err
}

// StoreLog stores one entry (StoreLogs).
func (t *truncatedTail) StoreLog(l *raft.Log) error {
	return t.StoreLogs([]*raft.Log{l})
}

// StoreLogs stores entries; once it succeeds, Raft's idea of its last entry
// is the store's again, and the truncated tail is forgotten.
func (t *truncatedTail) StoreLogs(logs []*raft.Log) error {
	if err := t.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	t.mu.Lock()
	t.tail = nil
	t.mu.Unlock()
	return nil
}

// IsMonotonic passes on whether the store refuses gaps
// (raft.MonotonicLogStore).
func (t *truncatedTail) IsMonotonic() bool {
	m, ok := t.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
