package engine

// Throttle is redis-cell's CL.THROTTLE: GCRA with the emission interval
// T = Period/Count in nanoseconds, a burst of MaxBurst+1 requests, and
// redis-cell's reply in whole seconds. It exists so that redis-cell's users can
// switch unchanged; RL.GCRA is the same limiter with millisecond periods and
// replies and exact arithmetic.
//
// Where redis-cell computes T through a double and counts remaining requests in
// microseconds, this does the same in integers: T = floor(Period*10^9/Count),
// which differs from the double only for periods above about 104 days, and
// only by nanoseconds.
type Throttle struct {
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

// Emission is T, the nanoseconds between requests at the steady rate; 0 means
// the rate is too high to express ("zero rates are not supported").
func (t Throttle) Emission() int64 {
	return mulDivFloor(t.Period, 1_000_000_000, t.Count)
}

// Tolerance is tau = T * (MaxBurst+1), the bucket's depth in nanoseconds.
func (t Throttle) Tolerance() int64 {
	return mulDivFloor(t.Emission(), t.MaxBurst+1, 1)
}

// Decide applies quantity at now (ms) to the theoretical arrival time tat
// (ns; 0 for a key never seen). It returns the new tat to store when the
// request was allowed with a non-zero quantity.
func (t Throttle) Decide(tat, nowMs, quantity int64) (int64, ThrottleReply) {
	now := nowMs * nsPerMs
	emission, tau := t.Emission(), t.Tolerance()
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
