package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// What a group's Raft log says of its disk (WatchDisk): whether its last
// append failed, and whether its appends have been slow. The node decides
// from it whether it should lead the group: a leader whose log cannot be
// written steps down (hashicorp/raft does that much) and stays out of
// elections until a write succeeds again, and one whose log is slow hands
// the leadership to a voter whose log is not.

var (
	// ErrLogWriteFailed is what DiskHealth.Failing wraps: an append to
	// the log failed (a full disk, an I/O error), and no write has
	// succeeded since.
	ErrLogWriteFailed = errors.New("the Raft log cannot be written")
	// ErrLogSlow is what DiskHealth.Slow wraps: appends to the log,
	// fsync included, have taken longer than the threshold, several in a
	// row.
	ErrLogSlow = errors.New("the Raft log is slow to write")
)

const (
	// slowWrites is how many appends in a row must take longer than the
	// threshold for the log to be slow, and how many in a row (probes
	// among them) must not for it to be fast again: one slow fsync is a
	// hiccup of a busy machine, three in a row are the disk.
	slowWrites = 3
	// ProbeInterval is how often a log whose disk failed, or is slow, is
	// probed with a write of its own, so that the node learns that the
	// disk works again even while nothing else writes to it (a node that
	// leads nothing and follows an idle shard).
	ProbeInterval = time.Second
	// A probe writes as much as the append that failed, within these
	// bounds, and fsyncs it: a disk with room for a few bytes is not yet a
	// disk with room for the log.
	minProbe = 4 << 10
	maxProbe = 4 << 20
	// probeFile is the probe's file, in the group's directory, removed
	// after each probe.
	probeFile = "disk-probe"
)

// DiskHealth is what the appends to one group's log, and the probes that
// follow a failed or slow one, say of its disk. Its methods are safe for
// concurrent use.
type DiskHealth struct {
	dir       string        // where probes write
	path      string        // the log, for errors to name
	slowAfter time.Duration // an append slower than this is slow
	faults    *DiskFaults   // nil: none

	mu         sync.Mutex
	failed     error // the last write's error, until a write succeeds
	failedSize int   // the bytes that append carried
	slowRun    int   // appends in a row slower than slowAfter
	fastRun    int   // appends in a row within it
	slow       bool
	last       time.Duration // the latest append's or probe's time

	wake chan struct{} // the probes start
	stop chan struct{}
	done chan struct{}
}

// DiskState is a DiskHealth's state, for INFO.
type DiskState struct {
	Failing error         // why the log cannot be written; nil when it can
	Slow    error         // why it is slow; nil when it is not
	Last    time.Duration // the latest append's (or probe's) time
}

// WatchDisk wraps store, the log store of the group in dir, so that every
// append is timed, fsync included, and its outcome kept in the DiskHealth
// it returns: an append slower than slowAfter counts as slow (slowWrites
// in a row make the log slow). faults, when not nil, are injected before
// each append and probe. Closing the store stops its probes.
func WatchDisk(store Store, dir string, slowAfter time.Duration, faults *DiskFaults) (Store, *DiskHealth) {
	h := &DiskHealth{
		dir: dir, path: store.Path(), slowAfter: slowAfter, faults: faults,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go h.probes()
	return &watchedStore{Store: store, health: h}, h
}

// Failing returns why the log cannot be written: the error its last append
// (or probe) failed with, while no probe has succeeded since. Nil when it
// can.
func (h *DiskHealth) Failing() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

// Slow says why the log is slow: nil unless its last slowWrites appends
// (or probes) each took longer than the threshold, and as many have not
// been fast since.
func (h *DiskHealth) Slow() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.slowError()
}

func (h *DiskHealth) slowError() error {
	if !h.slow {
		return nil
	}
	return fmt.Errorf("%w: %s: %d appends in a row took longer than %v (the latest %v)",
		ErrLogSlow, h.path, slowWrites, h.slowAfter, h.last.Round(time.Millisecond))
}

// State returns the health at once.
func (h *DiskHealth) State() DiskState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return DiskState{Failing: h.failed, Slow: h.slowError(), Last: h.last}
}

// wrote records an append of size bytes that took took and ended with err.
func (h *DiskHealth) wrote(took time.Duration, size int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failed, h.failedSize = fmt.Errorf("%w: %w", ErrLogWriteFailed, err), size
		h.wakeProbes()
		return
	}
	h.timed(took)
}

// timed counts a write that succeeded in took towards slow or fast.
func (h *DiskHealth) timed(took time.Duration) {
	h.last = took
	if took > h.slowAfter {
		h.fastRun, h.slowRun = 0, h.slowRun+1
		if h.slowRun >= slowWrites && !h.slow {
			h.slow = true
			h.wakeProbes()
		}
		return
	}
	h.slowRun, h.fastRun = 0, h.fastRun+1
	if h.fastRun >= slowWrites {
		h.slow = false
	}
}

func (h *DiskHealth) wakeProbes() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// troubled reports whether the log is failing or slow: probes go on.
func (h *DiskHealth) troubled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed != nil || h.slow
}

// probes probes the disk every ProbeInterval while the log is failing or
// slow, until the store closes.
func (h *DiskHealth) probes() {
	defer close(h.done)
	for {
		select {
		case <-h.wake:
		case <-h.stop:
			return
		}
		tick := time.NewTicker(ProbeInterval)
		for h.troubled() {
			select {
			case <-tick.C:
				h.probe()
			case <-h.stop:
				tick.Stop()
				return
			}
		}
		tick.Stop()
	}
}

// probe writes and fsyncs a file as large as the append that failed, and
// records the outcome: a probe that succeeds ends the failure, and counts
// towards slow or fast as an append does.
func (h *DiskHealth) probe() {
	h.mu.Lock()
	size := min(max(h.failedSize, minProbe), maxProbe)
	h.mu.Unlock()
	start := time.Now()
	err := h.writeProbe(size)
	took := time.Since(start)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failed = fmt.Errorf("%w: %w", ErrLogWriteFailed, err)
		return
	}
	h.failed = nil
	h.timed(took)
}

// writeProbe writes size bytes to the probe file, fsyncs and removes it.
func (h *DiskHealth) writeProbe(size int) error {
	path := filepath.Join(h.dir, probeFile)
	if err := h.faults.inject("write", path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	_, err = f.Write(make([]byte, size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// close stops the probes and waits for the one under way.
func (h *DiskHealth) close() {
	close(h.stop)
	<-h.done
}

// watchedStore is a log store whose appends a DiskHealth watches.
type watchedStore struct {
	Store
	health *DiskHealth
	once   sync.Once
}

// StoreLog appends one entry.
func (s *watchedStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs appends entries, timed, after the faults injected, if any.
func (s *watchedStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := s.health.faults.inject("write", s.Path())
	if err == nil {
		err = s.Store.StoreLogs(logs)
	}
	size := 0
	for _, l := range logs {
		size += len(l.Data)
	}
	s.health.wrote(time.Since(start), size, err)
	return err
}

// Close stops the probes and closes the store.
func (s *watchedStore) Close() error {
	s.once.Do(s.health.close)
	return s.Store.Close()
}
