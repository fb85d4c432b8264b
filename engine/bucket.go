package engine

import "math/bits"

// Bucket is the continuous bucket behind RL.TOKEN, RL.LEAKY and RL.GCRA. It
// holds a level between 0 and Capacity units that drains by Rate units every
// Period ms, continuously; a cost is granted when level + cost <= Capacity.
//
// The three commands are three readings of this one machine: a token bucket's
// tokens are Capacity - level, a leaky bucket (as a meter) is the level
// itself, and GCRA's theoretical arrival time is now + level * Period / Rate.
// A fresh key has level 0: a full token bucket, an empty leaky bucket.
//
// The level is kept exactly, as Whole + Frac/Period units, so no rate ever
// drifts however long it runs.
type Bucket struct {
	Capacity int64 // units the bucket holds, 1..MaxCount
	Rate     int64 // units drained (tokens refilled) every Period, 1..MaxCount
	Period   int64 // ms, 1..MaxDuration
}

// bucketLevel is a Bucket's state: Whole + Frac/Period units at time Last,
// with 0 <= Frac < Period.
type bucketLevel struct {
	Whole, Frac, Last int64
}

// DrainTime is the ms the bucket takes to drain from full to empty, the
// quantity MaxDuration bounds.
func (b Bucket) DrainTime() int64 {
	return mulDivCeil(b.Capacity, b.Period, b.Rate)
}

// drain returns st as of now. A clock moved backwards (DEBUG CLOCK SET) drains
// nothing and keeps Last, so time is never counted twice.
func (b Bucket) drain(st bucketLevel, now int64) bucketLevel {
	if now <= st.Last {
		return st
	}
	empty := bucketLevel{Last: now}
	// elapsed*Rate units have drained: whole units and a remainder in 1/Period.
	hi, lo := bits.Mul64(uint64(now-st.Last), uint64(b.Rate))
	if hi >= uint64(b.Period) {
		return empty // more than 2^64 whole units
	}
	whole, rem := bits.Div64(hi, lo, uint64(b.Period))
	if whole > uint64(st.Whole) {
		return empty
	}
	st.Whole -= int64(whole)
	st.Frac -= int64(rem)
	if st.Frac < 0 {
		if st.Whole == 0 {
			return empty
		}
		st.Whole--
		st.Frac += b.Period
	}
	st.Last = now
	return st
}

// Decide drains st to now and grants or refuses cost.
func (b Bucket) Decide(st bucketLevel, now, cost int64) (bucketLevel, Decision) {
	st = b.drain(st, now)
	level := st.Whole // rounded up: a partly drained unit is not yet free
	if st.Frac > 0 {
		level++
	}
	available := b.Capacity - level
	var d Decision
	switch {
	case cost > b.Capacity:
		d = denied(b.Capacity, available, RetryNever)
	case cost <= available:
		d = granted(b.Capacity, available, cost)
		st.Whole += cost
		st.Last = max(st.Last, now)
	default:
		d = denied(b.Capacity, available, max(b.drainTo(st, b.Capacity-cost), 1))
	}
	d.ResetAfter = b.drainTo(st, 0)
	return st, d
}

// drainTo is the ms until st's level is at most target whole units.
func (b Bucket) drainTo(st bucketLevel, target int64) int64 {
	excess := st.Whole - target
	if excess < 0 || (excess == 0 && st.Frac == 0) {
		return 0
	}
	return mulAddDivCeil(excess, b.Period, st.Frac, b.Rate)
}

// expiresAt is when st's level reaches zero.
func (b Bucket) expiresAt(st bucketLevel) int64 {
	return satAdd(st.Last, b.drainTo(st, 0))
}

// adopt converts state kept under old to b's as of now. The level drains at
// the old rate up to now and carries over in units, so switching parameters
// (back and forth, as during a rolling deploy) never frees budget; a
// fraction is rescaled to the new period rounding up. A level the new rate
// could not drain within MaxDuration is cut to what it can, which only
// matters for absurd changes (a huge bucket re-read at a trickle) and keeps
// every wait within MaxDuration.
func (b Bucket) adopt(old Bucket, st bucketLevel, now int64) bucketLevel {
	if old == b {
		return st
	}
	st = old.drain(st, now)
	if old.Period != b.Period && st.Frac > 0 {
		st.Frac = mulDivCeil(st.Frac, b.Period, old.Period)
		if st.Frac == b.Period {
			st.Whole++
			st.Frac = 0
		}
	}
	if most := mulDivFloor(MaxDuration, b.Rate, b.Period); st.Whole >= most {
		st.Whole, st.Frac = most, 0
	}
	return st
}

// refund lowers the level by up to n units, as of now.
func (b Bucket) refund(st bucketLevel, now, n int64) bucketLevel {
	st = b.drain(st, now)
	if st.Whole < n || (st.Whole == n && st.Frac == 0) {
		return bucketLevel{Last: max(st.Last, now)}
	}
	st.Whole -= n
	return st
}
