package cluster

import (
	"sync"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Both runners apply a shard's commands the same way: whole requests, one
// at a time under the replica's lock, each batch stamped with one reading of
// the clock and applied, in order, with one engine.Apply call. A shard
// nobody sends requests to sweeps its expired keys away on a timer
// (sweepPolicy).
//
// What differs is what a batch is. In memory it is one request, applied on
// the goroutine that submitted it (memory.go). In Raft mode the shard's
// leader gathers whole requests into a batch (batch) and encodes it into a
// log entry (proposer); every replica decodes the entry back into the same
// commands at the same time, and applies them (shardFSM, replica.apply), so
// that all replicas reach the same state; the leader's replica hands the
// results back to the proposer, which gives each request its own (deliver).

const (
	// maxBatchBytes bounds a batch, so that a flood of requests cannot
	// delay everyone's replies behind one long apply, and bounds a Raft
	// entry's size. It is soft: see batch.
	maxBatchBytes = 256 << 10
	// queueLen is how many requests a shard's proposer queues before
	// Submit waits for room.
	queueLen = 1024
	// sweepInterval and sweepBudget pace the reclaiming of expired keys on
	// a shard without traffic (traffic reclaims as it goes, in
	// engine.Apply). In Raft mode each sweep is a log entry, written and
	// replicated like any other, hence a sweep a second rather than many
	// small ones.
	sweepInterval = time.Second
	sweepBudget   = 50_000
)

// replica is a shard's engine and the observer told of what it applies. In
// memory it is the one copy of the shard; in Raft mode, this node's replica.
type replica struct {
	index    int                 // the shard's number
	observer *observerSlot       // hears of what is applied (see WriteObserver)
	scripts  engine.ScriptRunner // runs the shard's scripts (nil: none)

	// mu is taken once per batch, never per command: readers on other
	// goroutines (Stats, INFO, a read-only command) look between batches.
	mu    sync.Mutex
	shard *engine.Shard
	// captures are the snapshots of the shard being written (capture.go),
	// encoded at priority snapshotNice (encoder.go).
	captures     []*capture
	snapshotNice int
}

func newReplica(index int, observer *observerSlot, scripts engine.ScriptRunner) replica {
	shard := engine.NewShard()
	shard.SetScripts(scripts)
	return replica{index: index, observer: observer, scripts: scripts, shard: shard}
}

// apply applies a batch's commands in order at us (Unix µs), as one atomic step, and
// writes one result per command into results (at least as long). The write
// observer, if any, is told of the commands before apply returns, so before
// any request is answered.
func (r *replica) apply(us int64, cmds []engine.Command, results []engine.Result) {
	r.mu.Lock()
	r.applyLocked(us, cmds, results)
	r.mu.Unlock()
	r.observe(cmds)
}

// observe tells the write observer, if any, of commands just applied.
func (r *replica) observe(cmds []engine.Command) {
	if o := r.observer.active(); o != nil {
		o.Written(r.index, cmds)
	}
}

// inspect answers a read-only shard-wide command from the replica's state.
func (r *replica) inspect(c engine.Command) engine.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shard.Inspect(&c)
}

// stats returns the replica's counters as of its latest batch.
func (r *replica) stats() engine.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shard.Stats()
}

// batch is the requests gathered for one apply (in Raft mode, one entry).
// It takes requests whole, never part of one: a request is applied as one
// atomic step, and an RL.ALL group (a head command followed by its limits,
// engine/all.go) is always within one request, so the group is always
// applied whole, in memory and on every Raft replica alike. So the bound is
// soft: the request that crosses maxBatchBytes is taken whole.
type batch struct {
	reqs []*Request
	size int // the bytes the requests' commands take (requestSize)
}

// add takes r into the batch.
func (b *batch) add(r *Request) {
	b.reqs = append(b.reqs, r)
	b.size += requestSize(r)
}

// full reports whether the batch has reached its bound.
func (b *batch) full() bool { return b.size >= maxBatchBytes }

// addWaiting takes the requests already waiting on in, without waiting for
// more, until the batch is full.
func (b *batch) addWaiting(in <-chan *Request) {
	for !b.full() {
		select {
		case r := <-in:
			b.add(r)
		default:
			return
		}
	}
}

// reset empties the batch for reuse, keeping no request alive.
func (b *batch) reset() {
	clear(b.reqs)
	b.reqs, b.size = b.reqs[:0], 0
}

// requestSize estimates the bytes r's commands take in a Raft entry.
func requestSize(r *Request) int {
	n := 0
	for i := range r.Cmds {
		n += len(r.Cmds[i].Key) + len(r.Cmds[i].Value) + 24
	}
	return n
}

// deliver ends each request of a batch, which were sent: with its own
// results, in order, from results (the batch's, one per command), or with
// err when the batch was not applied. A request its waiter gave up on is
// skipped.
func deliver(reqs []*Request, results []engine.Result, err error) {
	off := 0
	for _, r := range reqs {
		n := len(r.Cmds)
		switch {
		case err != nil:
			fail(r, err)
		case r.claim():
			copy(r.Results, results[off:off+n])
			r.answer(nil)
		}
		off += n
	}
}

// sweepPolicy decides when a shard sweeps on its own: at a tick of
// sweepInterval, when no request arrived since the previous tick (traffic
// reclaims as it goes) and the shard has keys to look at.
type sweepPolicy struct {
	busy bool // a request arrived since the last tick
}

// request records that a request arrived.
func (p *sweepPolicy) request() { p.busy = true }

// due is asked at each tick, with the shard's key count.
func (p *sweepPolicy) due(keys int) bool {
	due := !p.busy && keys > 0
	p.busy = false
	return due
}

// sweepCommand reclaims up to sweepBudget expired keys.
func sweepCommand() engine.Command {
	return engine.Command{Op: engine.OpSweep, Args: [4]int64{sweepBudget}}
}
