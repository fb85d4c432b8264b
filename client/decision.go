package client

import (
	"fmt"
	"math"
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
	// nothing.
	Allowed bool
	// Limit is the budget: the limit of a window, the capacity of a bucket,
	// burst + 1 for GCRA and CL.THROTTLE.
	Limit int64
	// Remaining is what could still be granted right now, after this
	// decision; never negative.
	Remaining int64
	// RetryAfter is 0 when allowed. When refused, it is how long until the
	// same request would be allowed if nothing else is spent meanwhile, or
	// Never when it can never be.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full budget.
	ResetAfter time.Duration
}

// The field names of a decision reply: RESP3 map keys, and RESP2 array
// positions in this order.
var decisionFields = [5]string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}

// parseDecision reads the reply of RL.SLIDING, RL.FIXED, RL.LOG, RL.TOKEN,
// RL.LEAKY and RL.GCRA as go-redis returns it: []any of five int64 (RESP2)
// or a map keyed by the field names (RESP3).
func parseDecision(reply any) (Decision, error) {
	v, err := fiveIntegers(reply)
	if err != nil {
		return Decision{}, err
	}
	retry := msToDuration(v[3])
	if v[3] < 0 {
		retry = Never
	}
	return Decision{
		Allowed:    v[0] == 1,
		Limit:      v[1],
		Remaining:  v[2],
		RetryAfter: retry,
		ResetAfter: msToDuration(v[4]),
	}, nil
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

// fiveIntegers returns the five fields of a decision reply in
// decisionFields order, from either reply form.
func fiveIntegers(reply any) ([5]int64, error) {
	var v [5]int64
	switch r := reply.(type) {
	case []any:
		if len(r) != 5 {
			return v, fmt.Errorf("%w: an array of %d elements, not 5", ErrUnexpectedReply, len(r))
		}
		for i, e := range r {
			n, ok := e.(int64)
			if !ok {
				return v, fmt.Errorf("%w: %s is %T", ErrUnexpectedReply, decisionFields[i], e)
			}
			v[i] = n
		}
	case map[any]any:
		for i, name := range decisionFields {
			n, ok := r[name].(int64)
			if !ok {
				return v, fmt.Errorf("%w: map field %s is %T", ErrUnexpectedReply, name, r[name])
			}
			v[i] = n
		}
	case map[string]any:
		for i, name := range decisionFields {
			n, ok := r[name].(int64)
			if !ok {
				return v, fmt.Errorf("%w: map field %s is %T", ErrUnexpectedReply, name, r[name])
			}
			v[i] = n
		}
	default:
		return v, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
	return v, nil
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
