package client

import (
	"context"
	"errors"
	"fmt"
)

// KeyedRule is one limit of All: a key and what limits it, either a Rule
// or the name of a server policy.
type KeyedRule struct {
	// Key is the limiter key. The keys of one All must differ and share a
	// hash slot: give them one hash tag, e.g. "{ada}:second" and
	// "{ada}:day", so that rlserver can decide them in one atomic step.
	Key string
	// Rule is the limit on Key: any rule but Throttle.
	Rule Rule
	// Policy, instead of Rule, names a server policy (SetPolicy) to check
	// Key against, as Check does.
	Policy string
}

// errNoLimits: All was called without limits.
var errNoLimits = errors.New("rlserver: All needs at least one limit")

// All asks whether every limit may spend cost units, all or nothing
// (RL.ALL): if one refuses, none is spent, so a caller limited per second
// and per day is not charged a day's unit for a request the second refused.
// A cost of 0 peeks at every limit, a negative one refunds every limit.
//
// It returns the overall decision and each limit's, in the order given.
// The overall one is allowed when every limit allows; its Limit and
// Remaining are those of the limit with the fewest units left, its
// RetryAfter the longest wait among the limits that refuse (Never if one
// never can), its ResetAfter the longest. rlserver sends no Delay or
// ShadowDenied for the whole; here the overall Delay is the longest of the
// limits' (wait that long and every Shape limit is satisfied) and
// ShadowDenied is set if any limit's is.
//
// When the whole is refused, a limit that would have allowed on its own
// reports Allowed with its budget as it stands (nothing was spent); only
// the overall decision says whether to proceed.
//
// The keys must share a hash slot (CROSSSLOT otherwise, even on a single
// node with several shards). A policy name no policy has gives an error
// matching ErrNoSuchPolicy.
func (c *Client) All(ctx context.Context, cost int64, limits ...KeyedRule) (Decision, []Decision, error) {
	if len(limits) == 0 {
		return Decision{}, nil, errNoLimits
	}
	args := []any{"RL.ALL"}
	for i, l := range limits {
		switch {
		case (l.Rule == nil) == (l.Policy == ""):
			return Decision{}, nil, fmt.Errorf("RL.ALL limit %d (%s): give a Rule or a Policy: %w", i+1, l.Key, ErrNoRule)
		case l.Rule == nil:
			args = append(args, "POLICY", l.Key, l.Policy)
			continue
		}
		word, params, ok := l.Rule.limit()
		if !ok {
			return Decision{}, nil, fmt.Errorf("RL.ALL limit %d (%s): %T: %w", i+1, l.Key, l.Rule, ErrNotSupported)
		}
		args = append(append(args, word, l.Key), params...)
	}
	args = append(args, "COST", cost)
	first := limits[0].Key
	// The first key is argument 2, after the first limit's word.
	reply, err := c.doAt(ctx, 2, args...)
	if err != nil {
		return Decision{}, nil, fmt.Errorf("RL.ALL %s: %w", first, policyError(err))
	}
	overall, each, err := c.parseAll(ctx, reply, limits)
	if err != nil {
		return Decision{}, nil, fmt.Errorf("RL.ALL %s: %w", first, err)
	}
	return overall, each, nil
}

// parseAll reads RL.ALL's reply: an array of the overall decision and each
// limit's, in both protocols.
func (c *Client) parseAll(ctx context.Context, reply any, limits []KeyedRule) (Decision, []Decision, error) {
	arr, ok := reply.([]any)
	if !ok || len(arr) != 1+len(limits) {
		return Decision{}, nil, fmt.Errorf("%w: %T of %d, want an array of %d decisions", ErrUnexpectedReply, reply, lenOf(reply), 1+len(limits))
	}
	overall, err := parseDecision(arr[0])
	if err != nil {
		return Decision{}, nil, fmt.Errorf("overall decision: %w", err)
	}
	each := make([]Decision, len(limits))
	for i, l := range limits {
		r, err := readDecision(arr[1+i])
		if err == nil {
			if l.Rule != nil {
				word, _, _ := l.Rule.limit()
				err = r.name(ruleExtras(word)...)
			} else {
				err = c.nameCheckExtras(&r, false)
			}
		}
		if err != nil {
			return Decision{}, nil, fmt.Errorf("limit %d (%s): %w", i+1, l.Key, err)
		}
		each[i] = r.decision()
		if overall.Allowed {
			overall.Delay = max(overall.Delay, each[i].Delay)
		}
		overall.ShadowDenied = overall.ShadowDenied || each[i].ShadowDenied
	}
	return overall, each, nil
}

// lenOf is the length of an array reply, for error messages.
func lenOf(reply any) int {
	if arr, ok := reply.([]any); ok {
		return len(arr)
	}
	return 0
}
