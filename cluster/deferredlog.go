package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// hashicorp/raft writes a leader's entries to its log before it hands them
// to replication (dispatchLogs), so a commit is two appends in series: the
// leader's, then a follower's, each with its fsync. Raft does not ask for
// that order: the leader may count itself once its own append is durable,
// whenever that is. deferredLog takes the leader's append off the path:
// while its replica leads, StoreLogs queues the entries, readable at once,
// and returns; one writer goroutine appends everything queued to the log
// underneath (write and fsync, as before) while the entries travel to the
// followers, and the appends that arrive while it syncs share its next
// sync.
//
// Raft then counts the leader's copy before it is on disk, so three rules
// restore the guarantee that an entry anybody acts on is on a majority of
// disks:
//
//  1. A replica that does not lead appends as before: its StoreLogs returns
//     once the entries are on disk, so a follower's acknowledgement is a
//     disk's. hashicorp/raft stores a follower's entries on the goroutine
//     that has already left the leader's state (appendEntries steps down
//     before it stores), so asking the replica's state at each call is
//     exact.
//  2. The commit index a leader sends is never past what its own disk holds
//     (verifiedCommits lowers it on the way out), so no follower applies an
//     entry that only it and a leader's memory hold. Without this rule a
//     leader that crashes and loses its tail, and the follower that lacks
//     the entry, can elect a leader that overwrites an entry the other
//     follower has applied.
//  3. The proposer answers an entry's requests only once the leader's disk
//     holds it (waitDurable).
//
// A leader that crashes loses only entries nobody was answered for and no
// other replica applied; Raft's log matching takes them out of the
// followers that hold them, as it does for any leader's unacknowledged tail.
//
// The log underneath keeps its own contract unchanged: each of its appends
// is written and synced before the next begins, so its recovery (raft-wal
// checks only its last batch) sees nothing new.
type deferredLog struct {
	inner raft.LogStore
	// leading says whether the replica leads, once its Raft has started:
	// StoreLogs defers only while it does.
	leading atomic.Pointer[func() bool]

	mu      sync.Mutex
	pending []*raft.Log // queued and being written, consecutive indexes
	writing int         // how many of pending the writer is appending (0: idle)
	queued  uint64      // entries ever queued (less those taken back)
	written uint64      // entries ever written: everything queued up to here is on disk
	// durable is the last index on disk with every entry before it: the
	// last one written, or below a tail since removed. It bounds the
	// commit index a leader sends (rule 2).
	durable uint64
	// highest is the highest index ever written. A leader's entries are
	// never rewritten while anyone waits for them (rule 3): a removed tail
	// held only entries Raft had not committed.
	highest uint64
	// synchronous: pending is one synchronous StoreLogs' entries, which a
	// failed write takes back (Raft then knows they are not stored).
	synchronous bool
	// stuck: a write of deferred entries failed, and the writer retries
	// it; new appends are refused meanwhile (a leader then steps down).
	stuck    bool
	failures uint64 // writes that failed
	failure  error  // the latest failure
	err      error  // errLogClosed, once closed: every later call fails
	// advanced is closed, and replaced, after every write, failed or not:
	// what the waits wait on.
	advanced chan struct{}
	closed   bool
	lost     error // why entries queued when the log closed were never written

	wake chan struct{} // the writer has entries to append (room for one)
	done chan struct{} // closed when the writer has ended
}

// errLogClosed is what a deferred log's calls return once it has closed.
var errLogClosed = errors.New("the Raft log has closed")

// errLogGap is an append that does not follow the entries queued before it.
var errLogGap = errors.New("entries out of order")

// retryWrite is how long the writer waits before it tries again a write of
// deferred entries that failed (a full disk, say).
const retryWrite = 100 * time.Millisecond

// newDeferredLog starts deferring inner's appends; everything inner holds
// already is durable.
func newDeferredLog(inner raft.LogStore) (*deferredLog, error) {
	last, err := inner.LastIndex()
	if err != nil {
		return nil, err
	}
	d := &deferredLog{inner: inner, durable: last, highest: last, advanced: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go d.write()
	return d, nil
}

// deferWhileLeading makes the appends r makes as leader deferred.
func (d *deferredLog) deferWhileLeading(r *raft.Raft) {
	leading := func() bool { return r.State() == raft.Leader }
	d.leading.Store(&leading)
}

// write appends what is queued to the log underneath, in order, until the
// log closes with nothing left queued.
func (d *deferredLog) write() {
	defer close(d.done)
	for {
		d.mu.Lock()
		if len(d.pending) == 0 {
			if d.closed {
				d.err = errLogClosed
				d.signal()
				d.mu.Unlock()
				return
			}
			d.mu.Unlock()
			<-d.wake
			continue
		}
		batch := d.pending
		d.writing = len(batch)
		d.mu.Unlock()

		err := d.inner.StoreLogs(batch)

		d.mu.Lock()
		d.writing = 0
		if err != nil {
			d.failed(batch, err)
			retry := d.stuck && !d.closed
			if d.stuck && d.closed {
				// Closing with entries that cannot be written: they are
				// lost, as in a crash, and nobody was answered for them.
				d.pending, d.stuck, d.lost = nil, false, d.failure
			}
			d.mu.Unlock()
			if retry {
				select {
				case <-d.wake:
				case <-time.After(retryWrite):
				}
			}
			continue
		}
		d.written += uint64(len(batch))
		d.durable = batch[len(batch)-1].Index
		d.highest = max(d.highest, d.durable)
		// StoreLogs queued after batch while it was written: keep those,
		// moved to the front (over batch, which shares their array).
		n := copy(d.pending, d.pending[len(batch):])
		clear(d.pending[n:])
		d.pending = d.pending[:n]
		d.synchronous, d.stuck = false, false
		d.signal()
		d.mu.Unlock()
	}
}

// failed records, under mu, that writing batch failed with err. A
// synchronous append's entries are taken back: its StoreLogs fails, and
// Raft knows they are not stored. Deferred ones stay queued, readable, and
// the writer tries again: Raft has counted them stored.
func (d *deferredLog) failed(batch []*raft.Log, err error) {
	d.failures++
	d.failure = fmt.Errorf("appending entries %d to %d to the Raft log: %w", batch[0].Index, batch[len(batch)-1].Index, err)
	if d.synchronous {
		d.queued -= uint64(len(d.pending))
		clear(d.pending)
		d.pending, d.synchronous = d.pending[:0], false
	} else {
		d.stuck = true
	}
	d.signal()
}

// signal wakes the waiters, under mu.
func (d *deferredLog) signal() {
	close(d.advanced)
	d.advanced = make(chan struct{})
}

// StoreLog queues one entry.
func (d *deferredLog) StoreLog(l *raft.Log) error {
	return d.StoreLogs([]*raft.Log{l})
}

// StoreLogs queues entries for the writer. While the replica leads it
// returns at once; otherwise, once the writer has appended them (rule 1),
// after anything it queued while it led. Raft keeps the entries it passes
// and does not change them, so they are queued as they are.
func (d *deferredLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	leading := false
	if f := d.leading.Load(); f != nil {
		leading = (*f)()
	}
	d.mu.Lock()
	if !leading && len(d.pending) > 0 {
		// Entries queued while it led go first.
		target, failures := d.queued, d.failures
		d.mu.Unlock()
		if err := d.waitWritten(target, failures); err != nil {
			return err
		}
		d.mu.Lock()
	}
	switch n := len(d.pending); {
	case d.err != nil:
		d.mu.Unlock()
		return d.err
	case d.stuck:
		d.mu.Unlock()
		return d.failure
	case n > 0 && logs[0].Index != d.pending[n-1].Index+1:
		// Raft appends in order and truncates before it rewrites; the log
		// underneath would refuse a gap, but only later, in the writer.
		d.mu.Unlock()
		return fmt.Errorf("appending entry %d after %d to the Raft log: %w", logs[0].Index, d.pending[n-1].Index, errLogGap)
	}
	d.pending = append(d.pending, logs...)
	d.queued += uint64(len(logs))
	d.synchronous = !leading
	target, failures := d.queued, d.failures
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if leading {
		return nil
	}
	return d.waitWritten(target, failures)
}

// GetLog reads entry index: from the queue while it is there, then from
// the log underneath, which holds it before the writer takes it off.
func (d *deferredLog) GetLog(index uint64, out *raft.Log) error {
	d.mu.Lock()
	if d.err != nil {
		err := d.err
		d.mu.Unlock()
		return err
	}
	if n := len(d.pending); n > 0 && index >= d.pending[0].Index && index <= d.pending[n-1].Index {
		*out = *d.pending[index-d.pending[0].Index]
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	return d.inner.GetLog(index, out)
}

// FirstIndex is the first entry's index, queued or on disk (0: none).
func (d *deferredLog) FirstIndex() (uint64, error) {
	first, err := d.inner.FirstIndex()
	if err != nil || first != 0 {
		return first, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) > 0 {
		return d.pending[0].Index, nil
	}
	return 0, nil
}

// LastIndex is the last entry's index, queued or on disk (0: none).
func (d *deferredLog) LastIndex() (uint64, error) {
	d.mu.Lock()
	if n := len(d.pending); n > 0 {
		last := d.pending[n-1].Index
		d.mu.Unlock()
		return last, nil
	}
	d.mu.Unlock()
	return d.inner.LastIndex()
}

// DeleteRange removes entries min to max. A tail that reaches entries not
// yet written (a former leader's, which the new leader's log contradicts)
// is taken off the queue, with no write; a head all on disk is deleted at
// once; anything else waits until what was queued before it is written,
// so that the log underneath deletes what it holds. Removing the tail takes the durable index below it, until the
// entries that replace it are written.
func (d *deferredLog) DeleteRange(min, max uint64) error {
	if dropped, err := d.dropTail(min, max); dropped || err != nil {
		return err
	}
	d.mu.Lock()
	if len(d.pending) > 0 && max < d.pending[0].Index {
		// A head (compaction), all on disk: nothing queued need wait.
		defer d.mu.Unlock()
		return d.inner.DeleteRange(min, max)
	}
	target, failures := d.queued, d.failures
	d.mu.Unlock()
	if err := d.waitWritten(target, failures); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	tail := false
	if len(d.pending) == 0 {
		last, err := d.inner.LastIndex()
		if err != nil {
			return err
		}
		tail = max >= last
	}
	if err := d.inner.DeleteRange(min, max); err != nil {
		return err
	}
	if tail && min <= d.durable {
		d.durable = min - 1
	}
	return nil
}

// dropTail removes entries min to max when they are the log's tail and
// reach into the queue, once the writer is not writing; false when they
// are not.
func (d *deferredLog) dropTail(min, max uint64) (bool, error) {
	for {
		d.mu.Lock()
		n := len(d.pending)
		if n == 0 || max < d.pending[n-1].Index || min > d.pending[n-1].Index {
			d.mu.Unlock()
			return false, nil
		}
		if d.writing > 0 {
			advanced := d.advanced
			d.mu.Unlock()
			<-advanced
			continue
		}
		first := d.pending[0].Index
		keep := 0
		if min > first {
			keep = int(min - first)
		}
		clear(d.pending[keep:])
		d.pending = d.pending[:keep]
		d.queued -= uint64(n - keep)
		if keep == 0 {
			d.stuck, d.synchronous = false, false
		}
		var err error
		if min < first {
			// The tail begins on disk.
			err = d.inner.DeleteRange(min, first-1)
		}
		if min <= d.durable {
			d.durable = min - 1
		}
		d.signal()
		d.mu.Unlock()
		return true, err
	}
}

// IsMonotonic passes on what the log underneath says (hashicorp/raft then
// empties the log after restoring a snapshot rather than compacting it).
func (d *deferredLog) IsMonotonic() bool {
	m, ok := d.inner.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// durableIndex is the last index every entry up to which is on disk: what
// a leader's commit index may tell the followers (rule 2).
func (d *deferredLog) durableIndex() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.durable
}

// waitDurable waits until entry index, appended by this replica while it
// led, is on disk, or a write fails (or is being retried when it begins)
// or the log closes (the error), or stop closes (errLogClosed).
func (d *deferredLog) waitDurable(index uint64, stop <-chan struct{}) error {
	d.mu.Lock()
	failures := d.failures
	if d.stuck && d.highest < index {
		// The writer is retrying a write that failed, perhaps this
		// entry's: its outcome is not known.
		failures--
	}
	d.mu.Unlock()
	return d.wait(func() bool { return d.highest >= index }, failures, stop)
}

// waitWritten waits until the writer has written the first n entries ever
// queued, or a write fails after the failures-th. Counting entries rather
// than indexes keeps it exact across a rewritten tail.
func (d *deferredLog) waitWritten(n, failures uint64) error {
	return d.wait(func() bool { return d.written >= n }, failures, nil)
}

// wait waits until done, called under mu, holds, a write fails after the
// failures-th or the log closes, or stop closes.
func (d *deferredLog) wait(done func() bool, failures uint64, stop <-chan struct{}) error {
	for {
		d.mu.Lock()
		ok, advanced := done(), d.advanced
		var err error
		switch {
		case d.failures != failures:
			err = d.failure
		case d.err != nil:
			err = d.err
		}
		d.mu.Unlock()
		switch {
		case ok:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-advanced:
		case <-stop:
			return errLogClosed
		}
	}
}

// Close appends what is still queued (one more try, when writes fail) and
// stops the writer; the log underneath stays open (its owner closes it).
// It fails when entries could not be written.
func (d *deferredLog) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	<-d.done
	return d.lost
}
