package server

import (
	"errors"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// Error replies. The errors of commands, and the server's own, are Redis's
// texts already: the command table is the protocol's vocabulary. The
// engine's and the cluster's are typed (an engine error is a code and a
// message, and crosses the bus between nodes as such), and this is where
// they get the reply's first word.

// appendError appends the error reply to err: its first word (ERR,
// WRONGTYPE, TRYAGAIN ...), then its text. Line breaks in the text are
// replaced so the reply stays one line.
func appendError(b []byte, err error) []byte {
	return resp.AppendError(b, errorWord(err), err.Error())
}

// errorWord is the first word of the reply to a typed error, "" for an
// error whose text has its own.
//
// A command whose outcome rlserver cannot know (ErrMayHaveBeenCounted: its
// leader died, froze, was cut off or lost its leadership while it was being
// committed) is answered UNCERTAIN, not TRYAGAIN: go-redis (Client and
// ClusterClient), redis-py's RedisCluster and ioredis's Cluster retry
// TRYAGAIN on their own, and a retried decision that had been counted is
// counted twice without the caller seeing the first answer: in the compat
// suite's faults scenario (tests/compat/driver/faults.go, a minute of
// leaders killed and frozen), 7 decisions through each of go-redis's
// clients, 12 through ioredis's Cluster, 5 through RedisCluster; with
// UNCERTAIN none through go-redis, and 1 or 2 through the others, from
// their own retries after a broken connection. No client retries a word it does not know, so the caller
// sees it and chooses: fail open, fail closed, or retry knowing what a
// retry may cost. TRYAGAIN stays for what nothing was counted of, which any
// client may retry safely.
func errorWord(err error) string {
	if e := asError[*engine.Error](err); e != nil {
		return engineWord(e.Code)
	}
	switch {
	case errors.Is(err, cluster.ErrMayHaveBeenCounted):
		return "UNCERTAIN"
	case errors.Is(err, cluster.ErrNotApplied), errors.Is(err, cluster.ErrShuttingDown):
		return "TRYAGAIN"
	case asError[*cluster.Failure](err) != nil, asError[*cluster.MembershipError](err) != nil:
		return "ERR"
	}
	return ""
}

// asError is the error of type T that err is or wraps, the zero T if none.
// It is errors.As without the allocation of As's target, which every error
// reply would pay.
func asError[T error](err error) T {
	for err != nil {
		if e, ok := err.(T); ok {
			return e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		err = u.Unwrap()
	}
	var zero T
	return zero
}

// engineWord is the first word of the reply to an engine error of code:
// Redis's where Redis has the error, redis-cell's for CL.THROTTLE's own.
func engineWord(code engine.Code) string {
	switch code {
	case engine.CodeWrongType:
		return "WRONGTYPE"
	case engine.CodeOOM:
		return "OOM"
	case engine.CodeZeroRate:
		// redis-cell replies "Cell error: Zero rates are not supported",
		// without Redis's ERR: code that matches its reply keeps working.
		return "Cell error:"
	case engine.CodeNoScript:
		return "NOSCRIPT"
	case engine.CodeScript:
		// A script's error is worded whole, its first word the one the
		// script or the command it called gave it, as Redis replies it.
		return ""
	}
	return "ERR"
}

// ErrorText is the text of the error reply to err, its first word
// included, without "-": what a script sees of an error as {err=...}
// (cmd/rlserver gives it to package script).
func ErrorText(err error) string {
	b := appendError(nil, err)
	return string(b[1 : len(b)-2])
}

// errNotFederated refuses GLOBAL on a node that is no region of a
// federation.
var errNotFederated = errors.New("ERR GLOBAL needs a federation of regions: this node has no --region")

// checkFederated refuses cmds when one is GLOBAL and the server is no
// region of a federation.
func (s *Server) checkFederated(cmds []engine.Command) error {
	if s.cfg.Federated {
		return nil
	}
	for i := range cmds {
		if cmds[i].Flags&engine.FlagGlobal != 0 {
			return errNotFederated
		}
	}
	return nil
}
