package cluster

import (
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

// ErrShuttingDown answers requests that arrive while the node stops; their
// commands were not applied.
var ErrShuttingDown = errors.New("TRYAGAIN rlserver is shutting down")
