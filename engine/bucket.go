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

// charge raises the level by a refused cost all the same (FORCE): the
// bucket goes into debt, to be drained before it grants again. The level
// is capped where the bucket would take MaxDuration to drain (or at
// MaxCount units), which keeps every wait it reports in range.
func (b bucket) charge(st bucketLevel, now, cost int64) bucketLevel {
	st.Whole, st.Last = st.Whole+cost, max(st.Last, now)
	if most := min(mulDivFloor(MaxDuration, b.Rate, b.Period), MaxCount); st.Whole >= most {
		st.Whole, st.Frac = most, 0
	}
	return st
}

// bucketAlgorithm is RL.TOKEN, RL.LEAKY, RL.GCRA or RL.SHAPE: a record holds
// the bucket's capacity, rate and period, and its level. What tells them
// apart is their rows in ops (their parameters' names, and whether the first
// is a burst rather than a capacity), what RL.INFO says of the level, and
// whether the reply tells a granted request the queue ahead (the row's
// extra).
type bucketAlgorithm struct {
	op Op
	// burst: the first parameter is a burst, as the row's Params say (kept
	// here, where evaluate finds it without a look at the table).
	burst bool
	// level appends RL.INFO's fields on the level, after the parameters:
	// d is what a peek at now decides.
	level func(f []Field, b bucket, d Decision, now int64) []Field
}

// bucketFor is the bucket algorithm of op, whose command takes params.
func bucketFor(op Op, params []Param, level func(f []Field, b bucket, d Decision, now int64) []Field) bucketAlgorithm {
	return bucketAlgorithm{op: op, burst: params[0].Role == RoleBurst, level: level}
}

// The buckets' parameters, as their commands take them.
var (
	tokenParams = []Param{pCapacity, {Name: "refill_tokens", Min: 1, Max: MaxCount, Role: RoleUnits},
		{Name: "refill_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}}
	leakyParams = []Param{pCapacity, {Name: "leak_tokens", Min: 1, Max: MaxCount, Role: RoleUnits},
		{Name: "leak_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}}
	gcraParams = []Param{{Name: "burst", Max: MaxCount - 1, Role: RoleBurst},
		{Name: "count", Min: 1, Max: MaxCount, Role: RoleUnits}, {Name: "period_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}}
)

// bucketOf is the bucket a command's parameters p describe: a burst
// (RL.GCRA's, redis-cell's max_burst) is one unit short of the capacity.
func bucketOf(burst bool, p [3]int64) bucket {
	b := bucket{Capacity: p[0], Rate: p[1], Period: p[2]}
	if burst {
		b.Capacity++
	}
	return b
}

// paramsOf is bucketOf's inverse: b's parameters as the command gives them.
func paramsOf(burst bool, b bucket) [3]int64 {
	if burst {
		b.Capacity--
	}
	return [3]int64{b.Capacity, b.Rate, b.Period}
}

// drainCheck returns the check that refuses a bucket, of an op taking
// params, that would take longer than MaxDuration to drain from full, which
// keeps every wait it reports in range. formula says how the command's
// parameters give that time.
func drainCheck(params []Param, formula string) func(c Command) error {
	return func(c Command) error {
		if bucketOf(params[0].Role == RoleBurst, [3]int64{c.Args[0], c.Args[1], c.Args[2]}).drainTime() > MaxDuration {
			return paramError("%s (the time to drain a full bucket) must be at most %d ms", formula, int64(MaxDuration))
		}
		return nil
	}
}

func (ks *keyspace) bucket(i int32) (bucket, bucketLevel) {
	p, st := ks.paramsOf(i), &ks.records.at(i).state
	return bucket{Capacity: p[0], Rate: p[1], Period: p[2]}, bucketLevel{Whole: st[0], Frac: st[1], Last: st[2]}
}

// evaluate also says, in v.extra, how long a granted request waits for the
// queue ahead of it (RL.SHAPE's delay_ms, which the others do not reply).
func (a bucketAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	b := bucketOf(a.burst, p)
	var st bucketLevel
	converted := false
	if i >= 0 {
		old, ost := ks.bucket(i)
		st, converted = b.adopt(old, ost, now), old != b
	}
	if cost < 0 {
		st = b.refund(st, now, -cost)
	}
	queued := b.drainTo(b.drain(st, now), 0)
	v.params = [3]int64{b.Capacity, b.Rate, b.Period}
	st, v.d = b.decide(st, now, max(cost, 0))
	counted := v.counts(cost)
	if counted {
		st = b.charge(st, now, cost)
		_, peek := b.decide(st, now, 0)
		v.d = v.chargedReply(v.d, peek, peek) // only FORCE counts a bucket's refusal
	}
	v.write, v.state = keepState(i >= 0, cost, converted, v.d.Allowed || counted), [3]int64{st.Whole, st.Frac, st.Last}
	if v.d.Allowed || counted {
		v.extra = queued // a charge forced into RL.SHAPE's queue waits its turn too
	}
}

func (bucketAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	b, st := ks.bucket(i)
	return b.expiresAt(st)
}

// describe lists the parameters, as the command gives them and by its
// names, then the level as the algorithm reads it.
func (a bucketAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	b, st := ks.bucket(i)
	_, d := b.decide(st, now, 0)
	params := a.op.Spec().Params
	for k, v := range paramsOf(a.burst, b) {
		f = append(f, Field{Name: params[k].Name, Int: v})
	}
	return budgetFields(a.level(f, b, d, now), d, ks.expiresAt(i)-now)
}

// The readings of a bucket's level, for RL.INFO.
func tokensLeft(f []Field, _ bucket, d Decision, _ int64) []Field {
	return append(f, Field{Name: "tokens", Int: d.Remaining})
}

func levelHeld(f []Field, b bucket, d Decision, _ int64) []Field {
	return append(f, Field{Name: "level", Int: b.Capacity - d.Remaining})
}

// arrivalTime is GCRA's theoretical arrival time: when the bucket is empty.
func arrivalTime(f []Field, _ bucket, d Decision, now int64) []Field {
	return append(f, Field{Name: "tat_ms", Int: now + d.ResetAfter})
}

// queueAhead is RL.SHAPE's queue: the units in it, and how long a request
// granted now would wait for them, until the bucket is empty.
func queueAhead(f []Field, b bucket, d Decision, _ int64) []Field {
	return append(f, Field{Name: "queued", Int: b.Capacity - d.Remaining}, Field{Name: "delay_ms", Int: d.ResetAfter})
}

// valid checks the stored bucket, whose capacity a burst's command gives
// one less.
func (a bucketAlgorithm) valid(params, st [3]int64, _ []logEntry) bool {
	b := bucket{Capacity: params[0], Rate: params[1], Period: params[2]}
	params = paramsOf(a.burst, b)
	return validArgs(a.op, params) && validCount(st[0]) && st[1] >= 0 && st[1] < params[2] && validTime(st[2])
}
