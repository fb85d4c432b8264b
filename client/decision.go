package client

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Never is the RetryAfter of a refusal that waiting cannot change: the cost
// asked for is larger than the limit itself (rlserver's retry_after_ms -1,
// CL.THROTTLE's -1 on a limited reply). It is negative so that code which
// only checks RetryAfter > 0 never waits on it; compare with == Never.
const Never time.Duration = -1

// Decision is rlserver's answer to one rate-limit question, the same for
// every algorithm.
type Decision struct {
	// Allowed reports whether the cost was granted and spent. A refusal spends
	// nothing, except a Charge's, which is spent all the same.
	Allowed bool
	// Limit is the budget: the limit of a window, the capacity of a bucket,
	// burst + 1 for GCRA and CL.THROTTLE.
	Limit int64
	// Remaining is what could still be granted right now, after this
	// decision. Negative when the key holds more than its limit: a debt
	// (Charge, or a Settle above the estimate, took it past; or its limit
	// was lowered), which time pays off before anything is granted again.
	Remaining int64
	// RetryAfter is 0 when allowed. When refused, it is how long until the
	// same request would be allowed if nothing else is spent meanwhile, or
	// Never when it can never be.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full budget.
	ResetAfter time.Duration
	// Delay is how long an allowed request should wait before it proceeds:
	// RL.SHAPE queues rather than refuses, and this is the wait for the
	// units queued ahead of it (for a peek or a refund, the wait a request
	// would have now). Always 0 for a refusal and for the other algorithms.
	Delay time.Duration
	// ShadowDenied reports that a shadow policy (RL.POLICY SET ... SHADOW)
	// would have refused this request. Allowed is true regardless: a shadow
	// policy only counts, so a limit can be tried on live traffic before it
	// is enforced.
	ShadowDenied bool
}

// The field names of a decision reply: RESP3 map keys, and RESP2 array
// positions in this order.
var decisionFields = [5]string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}

// The extra fields some decision replies carry after the common five. In
// RESP2 they are bare integers whose meaning follows from their position and
// the command that asked, in this order: granted, delay_ms, lease_id,
// shadow_denied.
const (
	extraGranted      = "granted"       // PARTIAL: the units granted
	extraDelay        = "delay_ms"      // RL.SHAPE: the wait before proceeding
	extraLeaseID      = "lease_id"      // RL.ACQUIRE: the lease to release
	extraShadowDenied = "shadow_denied" // a shadow policy: 1 if it would have denied
)

// decisionReply is a decision reply as read, before its extra fields are
// named: RESP3 names them itself, RESP2 leaves that to the command's caller.
type decisionReply struct {
	v      [5]int64         // decisionFields, in order
	resp3  bool             // the reply was a map
	extras map[string]int64 // RESP3, and RESP2 once named
	bare   []int64          // RESP2: the extras, in order, not yet named
}

// readDecision reads a decision reply of any RL.* command as go-redis
// returns it: []any of integers (RESP2) or a map keyed by the field names
// (RESP3), either with extra fields.
func readDecision(reply any) (decisionReply, error) {
	var r decisionReply
	switch m := reply.(type) {
	case []any:
		if len(m) < 5 {
			return r, fmt.Errorf("%w: an array of %d elements, not 5 or more", ErrUnexpectedReply, len(m))
		}
		for i, e := range m {
			n, ok := e.(int64)
			if !ok {
				name := "an extra field"
				if i < 5 {
					name = decisionFields[i]
				}
				return r, fmt.Errorf("%w: %s is %T", ErrUnexpectedReply, name, e)
			}
			if i < 5 {
				r.v[i] = n
			} else {
				r.bare = append(r.bare, n)
			}
		}
		return r, nil
	case map[any]any:
		return readDecisionMap(m)
	case map[string]any:
		return readDecisionMap(m)
	default:
		return r, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
}

// readDecisionMap reads a RESP3 decision (go-redis returns RESP3 maps as
// map[any]any). Extra fields this package does not know are tolerated: a
// newer rlserver may add some, and they must not make the decision
// unreadable.
func readDecisionMap[K comparable](m map[K]any) (decisionReply, error) {
	r := decisionReply{resp3: true, extras: map[string]int64{}}
	for k, v := range m {
		name, ok := any(k).(string)
		if !ok {
			return r, fmt.Errorf("%w: map key %T", ErrUnexpectedReply, k)
		}
		n, isInt := v.(int64)
		if i := slices.Index(decisionFields[:], name); i >= 0 || knownExtra(name) {
			if !isInt {
				return r, fmt.Errorf("%w: map field %s is %T", ErrUnexpectedReply, name, v)
			}
			if i >= 0 {
				r.v[i] = n
				continue
			}
		}
		if isInt {
			r.extras[name] = n
		}
	}
	for _, name := range decisionFields {
		if _, ok := m[any(name).(K)]; !ok {
			return r, fmt.Errorf("%w: no map field %s", ErrUnexpectedReply, name)
		}
	}
	return r, nil
}

// knownExtra reports whether name is an extra field this package reads.
func knownExtra(name string) bool {
	switch name {
	case extraGranted, extraDelay, extraLeaseID, extraShadowDenied:
		return true
	}
	return false
}

// name checks that the reply carries the extra fields names, and in RESP2
// gives its bare extras those names, in order: RESP2 has no other way to
// say which is which, so the count must match exactly.
func (r *decisionReply) name(names ...string) error {
	if r.resp3 {
		for _, n := range names {
			if _, ok := r.extras[n]; !ok {
				return fmt.Errorf("%w: no %s field", ErrUnexpectedReply, n)
			}
		}
		return nil
	}
	if len(r.bare) != len(names) {
		return fmt.Errorf("%w: %d extra fields, want %d %v", ErrUnexpectedReply, len(r.bare), len(names), names)
	}
	r.extras = make(map[string]int64, len(names))
	for i, n := range names {
		r.extras[n] = r.bare[i]
	}
	r.bare = nil
	return nil
}

// decision is the reply as a Decision.
func (r *decisionReply) decision() Decision {
	retry := msToDuration(r.v[3])
	if r.v[3] < 0 {
		retry = Never
	}
	return Decision{
		Allowed:      r.v[0] == 1,
		Limit:        r.v[1],
		Remaining:    r.v[2],
		RetryAfter:   retry,
		ResetAfter:   msToDuration(r.v[4]),
		Delay:        msToDuration(max(r.extras[extraDelay], 0)),
		ShadowDenied: r.extras[extraShadowDenied] == 1,
	}
}

// parseDecision reads a decision reply whose RESP2 extra fields are extras,
// in that order (none for RL.SLIDING, RL.FIXED, RL.LOG, RL.TOKEN, RL.LEAKY
// and RL.GCRA).
func parseDecision(reply any, extras ...string) (Decision, error) {
	r, err := readDecision(reply)
	if err != nil {
		return Decision{}, err
	}
	if err := r.name(extras...); err != nil {
		return Decision{}, err
	}
	return r.decision(), nil
}

// parseThrottle reads CL.THROTTLE's redis-cell reply, an array of five
// integers in RESP2 and RESP3 alike: [limited, limit, remaining,
// retry_after_s, reset_after_s], where retry_after is -1 both when allowed
// and when the quantity can never be allowed.
func parseThrottle(reply any) (Decision, error) {
	arr, ok := reply.([]any)
	if !ok || len(arr) != 5 {
		return Decision{}, fmt.Errorf("%w: CL.THROTTLE answered %T %v", ErrUnexpectedReply, reply, reply)
	}
	var v [5]int64
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%w: CL.THROTTLE field %d is %T", ErrUnexpectedReply, i+1, e)
		}
		v[i] = n
	}
	d := Decision{
		Allowed:    v[0] == 0,
		Limit:      v[1],
		Remaining:  v[2],
		ResetAfter: secondsToDuration(v[4]),
	}
	switch {
	case d.Allowed:
		d.RetryAfter = 0
	case v[3] < 0:
		d.RetryAfter = Never
	default:
		d.RetryAfter = secondsToDuration(v[3])
	}
	return d, nil
}

// msToDuration converts milliseconds, saturating instead of wrapping: the
// server's bounds allow reset times of up to 2*10^12 ms, close to
// time.Duration's 292 years.
func msToDuration(ms int64) time.Duration {
	return scaleDuration(ms, time.Millisecond)
}

// secondsToDuration converts CL.THROTTLE's seconds, saturating.
func secondsToDuration(s int64) time.Duration {
	return scaleDuration(s, time.Second)
}

func scaleDuration(n int64, unit time.Duration) time.Duration {
	switch {
	case n > int64(math.MaxInt64/unit):
		return math.MaxInt64
	case n < int64(math.MinInt64/unit):
		return math.MinInt64
	}
	return time.Duration(n) * unit
}
