package cluster

import "errors"

// The errors a request can end with on its way to a shard, rather than in
// it (the engine's own errors are engine.Error). Their texts say what
// happened; the server gives each its reply's first word: TRYAGAIN for the
// three a retry may mend, ERR for a Failure.
var (
	// ErrNotApplied: the request reached no leader and changed nothing; the
	// client may simply retry.
	ErrNotApplied = errors.New("no leader for this shard right now; nothing was counted, retry")
	// ErrMayHaveBeenCounted: leadership changed while the request's entry
	// was being committed. Raft cannot say whether it was: it may still
	// commit under the next leader. A retry is safe for a limiter (it can
	// only count a request twice, never let one through uncounted).
	ErrMayHaveBeenCounted = errors.New("leadership changed while this request was being committed: it may have been counted")
	// ErrShuttingDown answers requests that arrive while the node stops;
	// their commands were not applied.
	ErrShuttingDown = errors.New("rlserver is shutting down")
)

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
