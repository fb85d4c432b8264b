package cluster

import (
	"sync"

	"github.com/rlserver/rlserver/persistence"
)

// closingStore is a group's log and stable store that drops, rather than
// fails, the writes of votes and terms that reach it after it closed.
//
// hashicorp/raft answers heartbeats on the transport's goroutines, outside
// the ones Shutdown waits for: a heartbeat that passed raft's shutdown check
// just before the group closed can go on to save a newer term, and raft
// panics when that save fails, taking the node down in the middle of a
// clean stop. Dropping the save is safe: the term only moves forward, so a
// restarted replica learns it again from the next message, and a vote is
// never cast on that path.
type closingStore struct {
	persistence.Store
	mu     sync.RWMutex
	closed bool
}

// Set stores a stable value, unless the store has closed.
func (s *closingStore) Set(key, val []byte) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	return s.Store.Set(key, val)
}

// SetUint64 stores a stable number, unless the store has closed.
func (s *closingStore) SetUint64(key []byte, val uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	return s.Store.SetUint64(key, val)
}

// Close closes the store once the stable writes under way are done.
func (s *closingStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.Store.Close()
}
