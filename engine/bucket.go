package engine

import "math/bits"

// bucket is the continuous bucket behind RL.TOKEN, RL.LEAKY and RL.GCRA. It
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
type bucket struct {
	Capacity int64 // units the bucket holds, 1..MaxCount
	Rate     int64 // units drained (tokens refilled) every Period, 1..MaxCount
	Period   int64 // ms, 1..MaxDuration
}

// bucketLevel is a bucket's state: Whole + Frac/Period units at time Last,
// with 0 <= Frac < Period.
type bucketLevel struct {
	Whole, Frac, Last int64
}

// drainTime is the ms the bucket takes to drain from full to empty, the
// quantity MaxDuration bounds.
func (b bucket) drainTime() int64 {
	return mulDivCeil(b.Capacity, b.Period, b.Rate)
}

// drain returns st as of now. A clock moved backwards (DEBUG CLOCK SET) drains
// nothing and keeps Last, so time is never counted twice.
func (b bucket) drain(st bucketLevel, now int64) bucketLevel {
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

// decide drains st to now and grants or refuses cost.
func (b bucket) decide(st bucketLevel, now, cost int64) (bucketLevel, Decision) {
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
func (b bucket) drainTo(st bucketLevel, target int64) int64 {
	excess := st.Whole - target
	if excess < 0 || (excess == 0 && st.Frac == 0) {
		return 0
	}
	return mulAddDivCeil(excess, b.Period, st.Frac, b.Rate)
}

// expiresAt is when st's level reaches zero.
func (b bucket) expiresAt(st bucketLevel) int64 {
	return satAdd(st.Last, b.drainTo(st, 0))
}

// adopt converts state kept under old to b's as of now. The level drains at
// the old rate up to now and carries over in units, so switching parameters
// (back and forth, as during a rolling deploy) never frees budget; a
// fraction is rescaled to the new period rounding up. A level the new rate
// could not drain within MaxDuration is cut to what it can, which only
// matters for absurd changes (a huge bucket re-read at a trickle) and keeps
// every wait within MaxDuration.
func (b bucket) adopt(old bucket, st bucketLevel, now int64) bucketLevel {
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
func (b bucket) refund(st bucketLevel, now, n int64) bucketLevel {
	st = b.drain(st, now)
	if st.Whole < n || (st.Whole == n && st.Frac == 0) {
		return bucketLevel{Last: max(st.Last, now)}
	}
	st.Whole -= n
	return st
}

// bucketAlgorithm is RL.TOKEN, RL.LEAKY, RL.GCRA or RL.SHAPE, as op says: a
// record holds the bucket's capacity, rate and period, and its level.
type bucketAlgorithm struct{ op Op }

// The buckets' parameters, as their commands take them.
var (
	tokenParams = []Param{pCapacity, {Name: "refill_tokens", Min: 1, Max: MaxCount, Role: RoleUnits},
		{Name: "refill_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}}
	leakyParams = []Param{pCapacity, {Name: "leak_tokens", Min: 1, Max: MaxCount, Role: RoleUnits},
		{Name: "leak_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}}
	gcraParams = []Param{{Name: "burst", Max: MaxCount - 1, Role: RoleBurst},
		{Name: "count", Min: 1, Max: MaxCount, Role: RoleUnits}, {Name: "period_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}}
)

// drainCheck returns the check that refuses a bucket that would take longer
// than MaxDuration to drain from full, which keeps every wait it reports in
// range. formula says how the command's parameters give that time; gcra, that
// the first parameter is a burst (the capacity is burst + 1).
func drainCheck(formula string, gcra bool) func(c Command) error {
	return func(c Command) error {
		b := bucket{Capacity: c.Args[0], Rate: c.Args[1], Period: c.Args[2]}
		if gcra {
			b = gcraBucket(c.Args)
		}
		if b.drainTime() > MaxDuration {
			return paramError("%s (the time to drain a full bucket) must be at most %d ms", formula, int64(MaxDuration))
		}
		return nil
	}
}

// gcraBucket is RL.GCRA's bucket: redis-cell's max_burst, so the limit is
// burst+1.
func gcraBucket(a [4]int64) bucket {
	return bucket{Capacity: a[0] + 1, Rate: a[1], Period: a[2]}
}

func (ks *keyspace) bucket(i int32) (bucket, bucketLevel) {
	p, st := ks.paramsOf(i), &ks.records.at(i).state
	return bucket{Capacity: p[0], Rate: p[1], Period: p[2]}, bucketLevel{Whole: st[0], Frac: st[1], Last: st[2]}
}

// evaluate also says, for RL.SHAPE, how long a granted request waits for
// the queue ahead of it.
func (a bucketAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	b := bucket{Capacity: p[0], Rate: p[1], Period: p[2]}
	if a.op == OpGCRA {
		b = gcraBucket([4]int64{p[0], p[1], p[2]})
	}
	var st bucketLevel
	converted := false
	if i >= 0 {
		old, ost := ks.bucket(i)
		st, converted = b.adopt(old, ost, now), old != b
	}
	if cost < 0 {
		st = b.refund(st, now, -cost)
	}
	queued := b.drainTo(b.drain(st, now), 0) // the queue ahead, for RL.SHAPE
	v.params = [3]int64{b.Capacity, b.Rate, b.Period}
	st, v.d = b.decide(st, now, max(cost, 0))
	v.write, v.state = keepState(i >= 0, cost, converted, v.d.Allowed), [3]int64{st.Whole, st.Frac, st.Last}
	if a.op == OpShape && v.d.Allowed {
		v.extra = queued
	}
}

func (bucketAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	b, st := ks.bucket(i)
	return b.expiresAt(st)
}

func (a bucketAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	b, st := ks.bucket(i)
	_, d := b.decide(st, now, 0)
	switch a.op {
	case OpToken:
		f = append(f, Field{Name: "capacity", Int: b.Capacity}, Field{Name: "refill_tokens", Int: b.Rate},
			Field{Name: "refill_ms", Int: b.Period}, Field{Name: "tokens", Int: d.Remaining})
	case OpLeaky:
		f = append(f, Field{Name: "capacity", Int: b.Capacity}, Field{Name: "leak_tokens", Int: b.Rate},
			Field{Name: "leak_ms", Int: b.Period}, Field{Name: "level", Int: b.Capacity - d.Remaining})
	case OpGCRA:
		f = append(f, Field{Name: "burst", Int: b.Capacity - 1}, Field{Name: "count", Int: b.Rate},
			Field{Name: "period_ms", Int: b.Period}, Field{Name: "tat_ms", Int: now + d.ResetAfter})
	case OpShape:
		f = append(f, Field{Name: "capacity", Int: b.Capacity}, Field{Name: "leak_tokens", Int: b.Rate},
			Field{Name: "leak_ms", Int: b.Period}, Field{Name: "queued", Int: b.Capacity - d.Remaining},
			Field{Name: "delay_ms", Int: b.drainTo(b.drain(st, now), 0)})
	}
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

// valid checks the stored bucket: RL.GCRA stores burst+1 as its capacity.
func (a bucketAlgorithm) valid(params, st [3]int64, _ []logEntry) bool {
	if a.op == OpGCRA {
		params[0]--
	}
	return validArgs(a.op, params) && validCount(st[0]) && st[1] >= 0 && st[1] < params[2] && validTime(st[2])
}
