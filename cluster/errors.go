package cluster

import (
	"errors"
	"fmt"
)

// The errors a request can end with on its way to a shard, rather than in
// it (the engine's own errors are engine.Error). Their texts say what
// happened; the server gives each its reply's first word: TRYAGAIN for the
// three a retry may mend, ERR for a Failure. A request's error wraps one of
// them with what this node knows at that moment (retryError): which shard,
// which leader, and what happened.
var (
	// ErrNotApplied: the request reached no leader and changed nothing; the
	// client may simply retry.
	ErrNotApplied = errors.New("nothing was counted, retry")
	// ErrMayHaveBeenCounted: the request was proposed or forwarded, and no
	// answer came: its leader lost its leadership, died, froze or was cut
	// off. Raft cannot say whether it was applied: it may still commit under
	// the next leader. A retry is safe for a limiter (it can only count a
	// request twice, never let one through uncounted).
	ErrMayHaveBeenCounted = errors.New("it may have been counted")
	// ErrShuttingDown answers requests that arrive while the node stops;
	// their commands were not applied.
	ErrShuttingDown = errors.New("rlserver is shutting down")
)

// retryError is err (one of the sentinels above) for a request on shard,
// saying why, and who leads the shard as far as this node knows ("": none):
// "shard 2, leader n3: no answer within the request timeout: it may have
// been counted".
func retryError(shard int, leader string, err error, why string) error {
	if leader == "" {
		return fmt.Errorf("shard %d: %s: %w", shard, why, err)
	}
	return fmt.Errorf("shard %d, leader %s: %s: %w", shard, leader, why, err)
}

// Failure is an error a retry does not mend: an entry every replica refused
// alike (nothing was decided), a peer's reply that does not decode.
type Failure struct{ Msg string }

// Error returns the message.
func (f *Failure) Error() string { return f.Msg }

// PeerReply is an error reply in a peer's own words: a node of a release
// before typed errors answers a forwarded request with its reply's text,
// first word included, which goes back to the client as it is.
type PeerReply string

// Error returns the reply's text.
func (p PeerReply) Error() string { return string(p) }
