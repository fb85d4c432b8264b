package client

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Errors returned (wrapped) by this package; compare with errors.Is.
var (
	// ErrUnexpectedReply: rlserver answered with a reply of the wrong shape,
	// e.g. the address is another kind of Redis server.
	ErrUnexpectedReply = errors.New("rlserver: unexpected reply")
	// ErrNoSuchKey: RL.INFO found no limiter under the key (it is at its
	// full budget).
	ErrNoSuchKey = errors.New("rlserver: no such key")
	// ErrNoRule: a decision was asked for without a Rule (or, in All, a
	// limit has neither a Rule nor a Policy, or both).
	ErrNoRule = errors.New("rlserver: no rule")
	// ErrNotSupported: the rule cannot be used that way. Throttle is
	// redis-cell's CL.THROTTLE, which has no refunds, PARTIAL, RL.ALL or
	// policies; use GCRA, the same algorithm in rlserver's own terms.
	ErrNotSupported = errors.New("rlserver: not supported by this rule")
	// ErrNoSuchPolicy: no server policy has the name (RL.POLICY GET found
	// none, or RL.CHECK or RL.ALL named one that does not exist).
	ErrNoSuchPolicy = errors.New("rlserver: no such policy")
	// ErrCircuitOpen: the Breaker is open, so rlserver was not asked.
	ErrCircuitOpen = errors.New("rlserver: circuit open")
	// ErrUnknownAPIKey: the request carried no API key, or one the lookup
	// does not know. The default key-error response answers it with 401.
	ErrUnknownAPIKey = errors.New("unknown API key")
)

// MayHaveBeenCounted reports whether err is rlserver's UNCERTAIN reply: the
// decision's shard lost its leader while the decision was being committed,
// so it may have been counted, or not. No client retries it on its own; a
// retry may count the request a second time (docs/cluster.md).
func MayHaveBeenCounted(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "UNCERTAIN ")
}

// isOutage reports whether err means rlserver could not give an answer
// (unreachable, too slow, or saying itself that it cannot answer now), as
// opposed to a reply that answers, such as a syntax error. Only outages
// count against the Breaker: an error reply proves the server is up.
func isOutage(err error) bool {
	if err == nil {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// The server answered, but said it cannot decide now: these prefixes
		// are rlserver's (and Redis Cluster's) words for a temporary outage,
		// UNCERTAIN one that caught the decision half way.
		return redis.IsTryAgainError(err) || MayHaveBeenCounted(err) || redis.IsClusterDownError(err) ||
			redis.IsLoadingError(err) || redis.IsMasterDownError(err) ||
			redis.IsMaxClientsError(err)
	}
	return true
}
