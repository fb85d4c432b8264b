package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/rlserver/rlserver/cluster"
)

// catalogueFSM is this node's copy of the catalogue, as the catalogue's
// Raft group applies it. Readers load the current version without a lock;
// each entry builds the next one (catalogueops.go).
type catalogueFSM struct {
	cur atomic.Pointer[cluster.Catalogue] // nil until the init entry is applied
	// halted is set by an entry only a newer rlserver can apply: the node
	// stops (halt, Node.Halted) rather than let its catalogue diverge.
	halted error
	halt   func(error)

	mu     sync.Mutex
	change chan struct{} // closed and replaced at every change
}

func newCatalogueFSM(halt func(error)) *catalogueFSM {
	return &catalogueFSM{halt: halt, change: make(chan struct{})}
}

// opResult is what applying a catalogue entry answers on the leader: the
// catalogue after it, and the error that refused it (nil: applied, or it
// changed nothing).
type opResult struct {
	cat *cluster.Catalogue
	err error
}

// Apply applies one catalogue entry.
func (f *catalogueFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if f.halted != nil {
		return opResult{err: f.halted}
	}
	cur := f.cur.Load()
	op, err := decodeCatalogueOp(l.Data)
	if err == nil {
		var next *cluster.Catalogue
		next, err = nextCatalogue(cur, op, l.Index)
		if err == nil {
			f.set(next)
			return opResult{cat: next}
		}
	}
	switch {
	case errors.Is(err, errNoChange):
		return opResult{cat: cur}
	case errors.Is(err, cluster.ErrNewerEntry):
		f.halted = fmt.Errorf("catalogue entry %d: %w", l.Index, err)
		f.halt(f.halted)
		return opResult{err: f.halted}
	}
	return opResult{cat: cur, err: err}
}

// set makes c the current catalogue and wakes those waiting for a change.
func (f *catalogueFSM) set(c *cluster.Catalogue) {
	f.cur.Store(c)
	f.mu.Lock()
	close(f.change)
	f.change = make(chan struct{})
	f.mu.Unlock()
}

// changed returns a channel closed at the next change.
func (f *catalogueFSM) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.change
}

// Snapshot captures the catalogue: it never changes once built, so the
// snapshot holds the pointer.
func (f *catalogueFSM) Snapshot() (raft.FSMSnapshot, error) {
	if f.halted != nil {
		return nil, f.halted
	}
	return catalogueSnapshot{f.cur.Load()}, nil
}

// Restore replaces the catalogue with a snapshot's.
func (f *catalogueFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var c *cluster.Catalogue
	if err := json.NewDecoder(rc).Decode(&c); err != nil {
		return fmt.Errorf("catalogue snapshot: %w", err)
	}
	f.set(c)
	return nil
}

type catalogueSnapshot struct{ c *cluster.Catalogue }

// Persist writes the catalogue as JSON ("null" before the init).
func (s catalogueSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.c); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release does nothing: the catalogue is shared, never changed.
func (catalogueSnapshot) Release() {}
