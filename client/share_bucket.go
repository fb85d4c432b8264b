package client

import (
	"math"
	"math/bits"
)

// bucket is the token bucket a holder of a budget lease decides with
// (RL.SHARE's holder contract): the grant in use refills it at rate units
// per window, it holds depth units at most, and it admits nothing at or
// after expires, when the grant runs out. Times are nanoseconds on the
// client's monotonic clock.
//
// Refill is exact: frac is what has accrued toward the next unit, in units
// × window, so no rounding ever makes a unit the rate has not paid for.
// That is what lets the holders of a key, together, never admit more than
// the bound RL.SHARE promises.
type bucket struct {
	rate, depth int64  // the grant's units per window; its bucket size in units
	window      int64  // ns
	expires     int64  // the grant is in force before this instant
	tokens      int64  // whole units in the bucket
	frac        uint64 // units × ns accrued toward the next unit, < window
	at          int64  // the instant tokens and frac stand at
}

// advance brings the bucket to now. A grant that has expired loses its
// tokens: the holder may not keep them for the next grant, which would
// then hand out budget the shard no longer counts as this holder's.
func (b *bucket) advance(now int64) {
	if now <= b.at {
		return
	}
	if now >= b.expires {
		b.tokens, b.frac, b.at = 0, 0, now
		return
	}
	elapsed := now - b.at
	b.at = now
	if b.tokens >= b.depth || b.rate == 0 {
		b.frac = 0
		return
	}
	hi, lo := bits.Mul64(uint64(elapsed), uint64(b.rate))
	var carry uint64
	lo, carry = bits.Add64(lo, b.frac, 0)
	hi += carry
	if hi >= uint64(b.window) { // more units than 64 bits hold: full anyway
		b.tokens, b.frac = b.depth, 0
		return
	}
	q, r := bits.Div64(hi, lo, uint64(b.window))
	if q >= uint64(b.depth-b.tokens) {
		b.tokens, b.frac = b.depth, 0
		return
	}
	b.tokens += int64(q)
	b.frac = r
}

// inForce reports whether the grant in use may admit at now.
func (b *bucket) inForce(now int64) bool { return now < b.expires }

// switchTo makes a new grant the one in use at now: the old one's tokens
// are kept, up to the new depth (its refill counted up to now at its own
// rate), and only fill, the holder's first grant, starts it full.
func (b *bucket) switchTo(now, rate, depth, window, expires int64, fill bool) {
	b.advance(now)
	if window != b.window {
		b.frac = 0 // accrued in another unit: dropping it errs low
	}
	b.rate, b.depth, b.window, b.expires = rate, depth, window, expires
	if fill {
		b.tokens = depth
	}
	if b.tokens >= depth {
		b.tokens, b.frac = depth, 0
	}
	b.at = max(b.at, now)
}

// take spends cost units at now if the bucket holds them (all or nothing)
// and reports whether it did. A cost of 0 is always granted.
func (b *bucket) take(now, cost int64) bool {
	b.advance(now)
	if !b.inForce(now) || cost > b.tokens {
		return false
	}
	b.tokens -= cost
	return true
}

// refund gives n units back, up to the depth, while the grant is in force.
func (b *bucket) refund(now, n int64) {
	b.advance(now)
	if !b.inForce(now) {
		return
	}
	if n >= b.depth-b.tokens {
		b.tokens, b.frac = b.depth, 0
		return
	}
	b.tokens += n
}

// wait is how long, from the bucket's instant, the rate takes to bring it
// to n units (rounded up; 0 if it holds them), or false if it never does:
// n exceeds the depth, or the rate is 0. The expiry is not considered: the
// next grant goes on from where this one leaves.
func (b *bucket) wait(n int64) (int64, bool) {
	if n <= b.tokens {
		return 0, true
	}
	if n > b.depth || b.rate == 0 {
		return 0, false
	}
	// (n - tokens) × window - frac, in units × ns; frac < window, so positive.
	hi, lo := bits.Mul64(uint64(n-b.tokens), uint64(b.window))
	var borrow uint64
	lo, borrow = bits.Sub64(lo, b.frac, 0)
	hi -= borrow
	if hi >= uint64(b.rate) {
		return math.MaxInt64, true
	}
	q, r := bits.Div64(hi, lo, uint64(b.rate))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(q), true
}
