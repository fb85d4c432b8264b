package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Request is one connection's commands for one shard. The shard applies Cmds
// as one atomic step (no other request's commands come between them), fills
// Results (which must be at least as long), sets Err when the request could
// not be applied at all, and then sends on Done.
type Request struct {
	Cmds    []engine.Command
	Results []engine.Result
	Err     error
	// Done receives one value when the request is finished. It must have room
	// for it: the shard never blocks on it.
	Done chan<- struct{}

	// In Raft mode, a request that reached no leader (nothing applied) is
	// routed again until deadline: an election or a leadership hand-over
	// costs the client time, not an error.
	shard    int
	reroute  func(*Request) bool // takes the request back; false: give up
	deadline time.Time
}

// Submitter queues requests on shards (MemoryShards and RaftShards do).
type Submitter interface {
	// Submit queues r on shard; r.Done is signalled once, when r is
	// finished.
	Submit(shard int, r *Request)
}

// Do runs cmds on shard through s, as one request and so one atomic step,
// and waits for their results. In Raft mode a request that finds no leader
// has already waited for an election (RaftConfig.LeaderWait) when Do returns
// ErrNotApplied: calling Do again at once waits again, it does not spin.
// When ctx ends first, Do returns ctx's error without waiting; the request
// may still be applied.
func Do(ctx context.Context, s Submitter, shard int, cmds ...engine.Command) ([]engine.Result, error) {
	r, done := newRequest(cmds)
	s.Submit(shard, r)
	select {
	case <-done:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Results, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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

// finish ends r: back to its router when it was not applied and may still
// find a leader, to its connection otherwise.
func finish(r *Request) {
	if r.reroute != nil && notApplied(r.Err) && r.reroute(r) {
		return
	}
	r.Done <- struct{}{}
}

// notApplied reports errors that guarantee nothing was counted.
func notApplied(err error) bool {
	return errors.Is(err, ErrNotApplied) || errors.Is(err, ErrShuttingDown)
}
