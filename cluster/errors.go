package cluster

import (
	"errors"
	"fmt"
)

// The errors a request can end with on its way to a shard, rather than in
// it (the engine's own errors are engine.Error). Their texts say what
// happened; the server gives each its reply's first word: TRYAGAIN for
// ErrNotApplied and ErrShuttingDown, which a retry mends, UNCERTAIN for
// ErrMayHaveBeenCounted, which clients must not retry blindly, ERR for a
// Failure. A request's error wraps one of
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

// ForwardedError is how a request forwarded to another node ended there,
// in that node's words: a sentinel above (Err, which errors.Is finds) and
// the node's own text for it, which says why ("shard 2, leader n3: the
// leader lost its leadership ... : it may have been counted"). Peer names
// the node, since the text speaks of "this node".
type ForwardedError struct {
	Peer string
	Text string
	Err  error
}

// Error names the peer, then gives its text.
func (e *ForwardedError) Error() string { return "forwarded to " + e.Peer + ": " + e.Text }

// Unwrap returns the sentinel.
func (e *ForwardedError) Unwrap() error { return e.Err }

// Failure is an error a retry does not mend: an entry every replica refused
// alike (nothing was decided), a peer's reply that does not decode.
type Failure struct{ Msg string }

// Error returns the message.
func (f *Failure) Error() string { return f.Msg }

// MembershipError refuses a change of the cluster's membership or
// placement, or a node that may not take part in it: its Code says why, its
// message says what to do. It crosses the bus as its code and message, so
// errors.Is compares codes (Is), and the server answers it with ERR.
type MembershipError struct {
	Code MembershipCode
	Msg  string
}

// MembershipCode is why a membership change or a node was refused.
type MembershipCode byte

// The reasons a membership change or a node is refused.
const (
	// MemberUnknown: no node has that id.
	MemberUnknown MembershipCode = iota + 1
	// MemberIncarnation: the cluster knows the node's id with another data
	// directory (another incarnation): its disk was lost or replaced, and
	// with it the Raft votes it cast.
	MemberIncarnation
	// MemberRemoved: the node was removed with CLUSTER FORGET.
	MemberRemoved
	// MemberHoldsReplicas: a node to forget still holds replicas.
	MemberHoldsReplicas
	// MemberBadMove: a move that cannot be made as asked.
	MemberBadMove
	// MemberConflict: an address or id another member uses, a cluster that
	// already exists, a shard count that differs.
	MemberConflict
)

// Error returns the message.
func (e *MembershipError) Error() string { return e.Msg }

// Is reports whether target is a *MembershipError of the same code, so that
// errors.Is(err, &MembershipError{Code: MemberRemoved}) asks for a code.
func (e *MembershipError) Is(target error) bool {
	t, ok := target.(*MembershipError)
	return ok && t.Code == e.Code
}

// refused is a MembershipError of code, its message formatted.
func refused(code MembershipCode, format string, args ...any) *MembershipError {
	return &MembershipError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ErrRemoved is what a node's errors wrap once the cluster has removed it
// (errors.Is(err, ErrRemoved)).
var ErrRemoved = &MembershipError{Code: MemberRemoved}

// ErrIncarnation is what a node's errors wrap when the cluster knows its id
// with another data directory.
var ErrIncarnation = &MembershipError{Code: MemberIncarnation}
