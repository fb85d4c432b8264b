package cluster

import (
	"errors"

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
}

// ErrShuttingDown answers requests that arrive while the node stops; their
// commands were not applied.
var ErrShuttingDown = errors.New("TRYAGAIN rlserver is shutting down")
