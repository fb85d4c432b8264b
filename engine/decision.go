package engine

// Decision is the answer to "may this caller spend cost units now?". Every
// RL.* algorithm fills it the same way, so one client helper serves them all.
type Decision struct {
	// Allowed reports whether the cost was granted (and consumed, unless the
	// cost was 0).
	Allowed bool
	// Limit is the budget: the limit, capacity or burst of the algorithm.
	Limit int64
	// Remaining is how many more units could be granted right now, after this
	// decision. Negative when the key holds more than its limit: a FORCE
	// charge took it past (the debt to be paid off before anything is
	// granted again), or its limit was lowered.
	Remaining int64
	// RetryAfter is 0 when allowed; when denied, the milliseconds until the
	// same request would be allowed (at least 1), or -1 when it never can be
	// because the cost exceeds the budget.
	RetryAfter int64
	// ResetAfter is the milliseconds until the limiter is back to its full
	// budget, i.e. indistinguishable from a key never seen.
	ResetAfter int64
}

// RetryNever is the RetryAfter of a cost that can never fit the budget.
const RetryNever = -1

// denied returns a refusal; retry is RetryNever or a positive wait in ms.
// available is what a peek would grant, negative when the key is in debt.
func denied(limit, available, retry int64) Decision {
	return Decision{Limit: limit, Remaining: available, RetryAfter: retry}
}

// granted returns an approval that leaves available-cost units.
func granted(limit, available, cost int64) Decision {
	return Decision{Allowed: true, Limit: limit, Remaining: available - cost}
}
