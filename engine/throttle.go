package engine

// throttle is redis-cell's CL.THROTTLE: GCRA with the emission interval
// T = Period/Count in nanoseconds, a burst of MaxBurst+1 requests, and
// redis-cell's reply in whole seconds. It exists so that redis-cell's users can
// switch unchanged; RL.GCRA is the same limiter with millisecond periods and
// replies and exact arithmetic.
//
// Where redis-cell computes T through a double and counts remaining requests in
// microseconds, this does the same in integers: T = floor(Period*10^9/Count),
// which differs from the double only for periods above about 104 days, and
// only by nanoseconds.
type throttle struct {
	MaxBurst int64 // 0..MaxCount-1; the limit is MaxBurst+1
	Count    int64 // requests per Period, 1..MaxCount
	Period   int64 // seconds, 1..MaxDuration/1000
}

// ThrottleReply is CL.THROTTLE's five integers.
type ThrottleReply struct {
	Limited    bool  // 1 on the wire when the request was refused
	Limit      int64 // MaxBurst+1
	Remaining  int64
	RetryAfter int64 // seconds, -1 when allowed or when it can never fit
	ResetAfter int64 // seconds until the bucket is full again
}

const nsPerMs = 1_000_000

// emission is T, the nanoseconds between requests at the steady rate; 0 means
// the rate is too high to express ("zero rates are not supported").
func (t throttle) emission() int64 {
	return mulDivFloor(t.Period, 1_000_000_000, t.Count)
}

// tolerance is tau = T * (MaxBurst+1), the bucket's depth in nanoseconds.
func (t throttle) tolerance() int64 {
	return mulDivFloor(t.emission(), t.MaxBurst+1, 1)
}

// decide applies quantity at now (ms) to the theoretical arrival time tat
// (ns; 0 for a key never seen). It returns the new tat to store when the
// request was allowed with a non-zero quantity.
func (t throttle) decide(tat, nowMs, quantity int64) (int64, ThrottleReply) {
	now := nowMs * nsPerMs
	emission, tau := t.emission(), t.tolerance()
	tat = max(tat, now)
	reply := ThrottleReply{Limit: t.MaxBurst + 1, RetryAfter: -1}
	ttl := tat - now
	if quantity > t.MaxBurst+1 {
		// increment > tau: refused, and no wait would help.
		reply.Limited = true
	} else {
		newTat := tat + emission*quantity
		if diff := now - (newTat - tau); diff < 0 {
			reply.Limited = true
			reply.RetryAfter = cellSeconds(-diff)
		} else {
			ttl = newTat - now
			tat = newTat
		}
	}
	// redis-cell can count a negative remaining after max_burst was lowered;
	// a budget below zero means nothing to a client, so it is 0 here.
	if next := tau - ttl; next > -emission {
		reply.Remaining = max(cellRemaining(next, emission), 0)
	}
	reply.ResetAfter = cellSeconds(ttl)
	return tat, reply
}

// cellRemaining is redis-cell's count of whole emission intervals in next,
// taken in microseconds (and in nanoseconds where T is under a microsecond,
// where redis-cell divides by zero).
func cellRemaining(next, emission int64) int64 {
	if emission >= 1000 {
		return (next / 1000) / (emission / 1000)
	}
	return next / emission
}

// cellSeconds rounds a duration in ns to seconds as redis-cell does: up by one
// second when the part below a second has at least one whole millisecond.
func cellSeconds(ns int64) int64 {
	s := ns / 1_000_000_000
	if (ns%1_000_000_000)/nsPerMs > 0 {
		s++
	}
	return s
}

// throttleExpiresAt is the first ms at which tat (ns) has passed.
func throttleExpiresAt(tat int64) int64 {
	return (tat + nsPerMs - 1) / nsPerMs
}

// throttleAlgorithm is CL.THROTTLE: a record holds redis-cell's parameters
// and the theoretical arrival time, in nanoseconds.
type throttleAlgorithm struct{}

// throttleParams are CL.THROTTLE's parameters. A count or period of 0 is a
// zero rate, which redis-cell refuses in its own words.
var throttleParams = []Param{
	{Name: "max_burst", Max: MaxCount - 1, Role: RoleBurst},
	{Name: "count", Min: 1, Max: MaxCount, Zero: ErrZeroRate, Role: RoleUnits},
	{Name: "period", Min: 1, Max: MaxDuration / 1000, Zero: ErrZeroRate},
}

// checkThrottle refuses a rate too high to express (more than one request a
// nanosecond, a zero rate to redis-cell) and a bucket deeper than
// MaxDuration.
func checkThrottle(c Command) error {
	t := throttle{MaxBurst: c.Args[0], Count: c.Args[1], Period: c.Args[2]}
	if t.emission() == 0 {
		return ErrZeroRate
	}
	if t.tolerance() > MaxDuration*nsPerMs {
		return paramError("(max_burst + 1) * period / count must be at most %d s", int64(MaxDuration/1000))
	}
	return nil
}

func (ks *keyspace) throttle(i int32) (throttle, int64) {
	p := ks.paramsOf(i)
	return throttle{MaxBurst: p[0], Count: p[1], Period: p[2]}, ks.records.at(i).state[0]
}

func (throttleAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	t := throttle{MaxBurst: p[0], Count: p[1], Period: p[2]}
	var tat int64
	if i >= 0 {
		_, tat = ks.throttle(i)
	}
	tat, v.throttle = t.decide(tat, now, cost)
	v.write = !v.throttle.Limited && cost > 0
	v.params, v.state = [3]int64{t.MaxBurst, t.Count, t.Period}, [3]int64{tat}
}

func (throttleAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	_, tat := ks.throttle(i)
	return throttleExpiresAt(tat)
}

func (throttleAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	t, tat := ks.throttle(i)
	_, reply := t.decide(tat, now, 0)
	d := Decision{Limit: reply.Limit, Remaining: reply.Remaining}
	d.ResetAfter = throttleExpiresAt(max(tat, now*nsPerMs)) - now
	f = append(f, Field{Name: "max_burst", Int: t.MaxBurst}, Field{Name: "count", Int: t.Count},
		Field{Name: "period_s", Int: t.Period}, Field{Name: "tat_ns", Int: tat})
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

// valid checks the stored TAT: at most one bucket depth past the latest
// instant.
func (throttleAlgorithm) valid(params, st [3]int64, _ []logEntry) bool {
	return validArgs(OpThrottle, params) && st[0] >= 0 && st[0] <= (MaxTime+MaxDuration)*nsPerMs && st[1] == 0 && st[2] == 0
}
