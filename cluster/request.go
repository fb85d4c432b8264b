package cluster

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Request is one connection's commands for one shard. The shard applies Cmds
// as one atomic step (no other request's commands come between them), fills
// Results (which must be at least as long), sets Err when the request could
// not be applied at all, and then sends on Done.
//
// Its waiter may give up on it at its Deadline (Expire): the request is then
// the waiter's again, with an error that says how far it got, and the cluster
// drops whatever it still holds of it. Until then the cluster owns it. So
// that the two never both touch it, a request moves through states, and
// each side acts only after winning the move it needs:
//
//	pending  queued, or waiting for a leader: nothing of it has left the node
//	busy     the cluster is reading its commands (applying them, or encoding
//	         them into a Raft entry or a forwarded frame) or writing its results
//	sent     proposed or forwarded: it may be applied, its answer is awaited
//	done     answered: Done is signalled
//	expired  given up by its waiter (from pending or sent, never from busy)
//
// The keys and values of Cmds alias the connection's memory, which it reuses
// once the request is done or expired: the cluster reads them only while it
// holds the request busy.
type Request struct {
	Cmds    []engine.Command
	Results []engine.Result
	Err     error
	// Done receives one value when the request is finished, unless its
	// waiter expired it. It must have room for it: the shard never blocks
	// on it.
	Done chan<- struct{}
	// Wake, when set, is called right after Done is signalled, on the
	// goroutine that answered: a waiter that must not block on Done (an
	// event loop, serving many connections on one thread) learns from it
	// that Done has a value to take. It must not block either.
	Wake func()
	// Deadline is when the waiter gives up on the request (see Expire):
	// in Raft mode a request that reaches no leader (an election, a
	// leadership hand-over) is routed again until then. Zero: the
	// configured request timeout from Submit. It is read at each Submit, so
	// a request reused for another submission needs a new one, or zero.
	Deadline time.Time

	state atomic.Int32
	// Set by Submit, read by whoever routes the request.
	shard    int
	deadline time.Time           // Deadline, or Submit's default
	reroute  func(*Request) bool // takes the request back; false: give up
	// leader is the node the request was last sent to, for the errors that
	// name it; written only while the cluster holds the request busy.
	leader string
}

// The states of a Request (see its doc).
const (
	reqPending int32 = iota
	reqBusy
	reqSent
	reqDone
	reqExpired
)

// begin readies r to be submitted, shard being its shard, to be answered
// within timeout when r sets no Deadline.
func (r *Request) begin(shard int, reroute func(*Request) bool, timeout time.Duration) {
	r.Err = nil
	r.shard, r.reroute, r.leader = shard, reroute, ""
	r.deadline = r.Deadline
	if r.deadline.IsZero() {
		r.deadline = time.Now().Add(timeout)
	}
	r.state.Store(reqPending)
}

// take makes the cluster the reader of r's commands: false when its waiter
// has given up on it (drop it, without touching it).
func (r *Request) take() bool { return r.state.CompareAndSwap(reqPending, reqBusy) }

// markSent records that r, taken, has been proposed or forwarded to leader
// (a node id).
func (r *Request) markSent(leader string) {
	r.leader = leader
	r.state.Store(reqSent)
}

// release gives back r, taken and its commands read, to wait for a
// connection: its waiter may give up on it meanwhile. leader is the node it
// is about to be sent to.
func (r *Request) release(leader string) {
	r.leader = leader
	r.state.Store(reqPending)
}

// send records that r, released, is being sent now: false when its waiter
// has given up on it (do not send it).
func (r *Request) send() bool { return r.state.CompareAndSwap(reqPending, reqSent) }

// rewind takes back r, sent but not applied, to be routed again: false when
// its waiter has given up on it.
func (r *Request) rewind() bool {
	return r.state.CompareAndSwap(reqSent, reqPending) || r.state.Load() == reqPending
}

// claim makes the cluster the writer of r's answer: false when its waiter
// has given up on it.
func (r *Request) claim() bool {
	return r.state.CompareAndSwap(reqSent, reqBusy) || r.state.CompareAndSwap(reqPending, reqBusy)
}

// answer ends r, which the caller holds busy: err (nil when r's results are
// written), then Done.
func (r *Request) answer(err error) {
	r.Err = err
	wake := r.Wake // once Done is signalled, r is its waiter's again
	r.state.Store(reqDone)
	r.Done <- struct{}{}
	if wake != nil {
		wake()
	}
}

// Expire gives up on r, past its deadline. It reports true when r is the
// caller's again: Done will not be signalled, r.Err says how far the request
// got (nothing counted, or maybe counted), and the cluster may still hold r
// and its Cmds, so the caller must not reuse either. It reports false when
// the cluster is answering r: Done is, or is about to be, signalled.
func (r *Request) Expire() bool {
	for {
		switch r.state.Load() {
		case reqPending:
			if r.state.CompareAndSwap(reqPending, reqExpired) {
				why := "no leader was elected within the request timeout"
				if r.leader != "" {
					why = "its leader could not be reached within the request timeout"
				}
				r.Err = retryError(r.shard, r.leader, ErrNotApplied, why)
				return true
			}
		case reqSent:
			if r.state.CompareAndSwap(reqSent, reqExpired) {
				r.Err = retryError(r.shard, r.leader, ErrMayHaveBeenCounted, "no answer within the request timeout")
				return true
			}
		case reqBusy:
			// Reading or writing it takes microseconds: no lock held,
			// nothing blocking.
			runtime.Gosched()
		default:
			return false
		}
	}
}

// Submitter queues requests on shards (MemoryShards and RaftShards do).
type Submitter interface {
	// Submit queues r on shard; r.Done is signalled once, when r is
	// finished, unless r is expired first.
	Submit(shard int, r *Request)
}

// Do runs cmds on shard through s, as one request and so one atomic step,
// and waits for their results. In Raft mode a request that finds no leader
// has already waited for an election, until ctx's deadline or the request
// timeout, when Do returns ErrNotApplied: calling Do again at once waits
// again, it does not spin. When ctx ends first, Do returns ctx's error
// without waiting; the request may still be applied.
func Do(ctx context.Context, s Submitter, shard int, cmds ...engine.Command) ([]engine.Result, error) {
	r, done := newRequest(cmds)
	r.Deadline, _ = ctx.Deadline()
	s.Submit(shard, r)
	select {
	case <-done:
	case <-ctx.Done():
		if r.Expire() {
			return nil, ctx.Err()
		}
		<-done
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Results, nil
}

// newRequest is a request for cmds with room for their results; done
// receives its signal.
func newRequest(cmds []engine.Command) (r *Request, done <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return &Request{Cmds: cmds, Results: make([]engine.Result, len(cmds)), Done: ch}, ch
}

// submitFunc is a function as a Submitter.
type submitFunc func(shard int, r *Request)

// Submit calls f.
func (f submitFunc) Submit(shard int, r *Request) { f(shard, r) }

// fail ends r with err unless it was not applied and its router takes it
// back to find a leader. r is pending, or sent; nobody holds it busy.
func fail(r *Request, err error) {
	if r.reroute != nil && notApplied(err) && r.rewind() && r.reroute(r) {
		return
	}
	if r.claim() {
		r.answer(err)
	}
}

// notApplied reports errors that guarantee nothing was counted.
func notApplied(err error) bool {
	return errors.Is(err, ErrNotApplied) || errors.Is(err, ErrShuttingDown)
}
