package client

import (
	"math"
	"math/bits"
	"time"
)

// Rule is one of rlserver's algorithms with its parameters: the question a
// decision asks about a key. The types of this package are its only
// implementations: SlidingWindow, FixedWindow, SlidingLog, TokenBucket,
// LeakyBucket, GCRA, Shape, Quota and Throttle.
//
// Durations are sent in whole milliseconds (whole seconds for Throttle),
// rounded up, so a positive duration never becomes 0. Parameters are
// validated by rlserver, which answers out-of-range values with an error
// naming the bound (docs/commands.md).
type Rule interface {
	// Policy describes the rule as "Quota units per Window", the q and w of
	// the RateLimit-Policy header and the basis of the local fallback
	// limiter. For windows that is the limit per window; for buckets, the
	// capacity per time a full bucket takes to refill from empty; for a
	// calendar Quota, the limit per the longest period (see Quota.Policy).
	Policy() (quota int64, window time.Duration)

	// limit is the rule in the words rlserver's own decision commands share:
	// the algorithm's word, which RL.ALL and RL.POLICY SET take and which
	// names its command (RL.<word>), and the parameters after the key. ok is
	// false for Throttle, which only redis-cell's CL.THROTTLE takes.
	limit() (word string, params []any, ok bool)
	// command is the rlserver command deciding cost units for key.
	command(key string, cost int64) []any
	// parse reads that command's reply.
	parse(reply any) (Decision, error)
}

// ruleCommand is the command of a rule in rlserver's own words:
// RL.<word> key params... COST cost.
func ruleCommand(r Rule, key string, cost int64) []any {
	word, params, _ := r.limit()
	args := make([]any, 0, len(params)+4)
	args = append(args, "RL."+word, key)
	args = append(args, params...)
	return append(args, "COST", cost)
}

// ruleExtras are the extra fields of a rule's plain reply: RL.SHAPE's wait.
func ruleExtras(word string) []string {
	if word == wordShape {
		return []string{extraDelay}
	}
	return nil
}

// durationMs is d in whole milliseconds, rounded up.
func durationMs(d time.Duration) int64 {
	return ceilDiv(int64(d), int64(time.Millisecond))
}

// durationSeconds is d in whole seconds, rounded up: the delay-seconds of
// HTTP headers and CL.THROTTLE's period.
func durationSeconds(d time.Duration) int64 {
	return ceilDiv(int64(d), int64(time.Second))
}

// ceilDiv is a / b rounded toward positive infinity, for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// refillTime is how long a bucket of capacity units refilling units per
// every takes to fill from empty: capacity * every / units, rounded up and
// saturated. Computed in 128 bits because capacity may be up to 10^15.
func refillTime(capacity, units int64, every time.Duration) time.Duration {
	if capacity <= 0 || units <= 0 || every <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(capacity), uint64(every))
	if hi >= uint64(units) {
		return math.MaxInt64 // the quotient would not fit in 64 bits
	}
	q, r := bits.Div64(hi, lo, uint64(units))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(q)
}
