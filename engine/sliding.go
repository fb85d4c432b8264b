package engine

// slidingWindow is the sliding-window counter of the seed article: windows
// aligned to multiples of Window since the Unix epoch, and the estimate
//
//	estimate = prev * (Window - elapsed) / Window + cur
//
// where cur counts the window in progress, prev the one before it and elapsed
// is the time since the current window began. A cost is granted when
// estimate + cost <= Limit. The article's Lua script computes the estimate in
// doubles; here it is exact, so the two agree except where the doubles round
// a millisecond up.
type slidingWindow struct {
	Limit  int64 // requests (units) per window, 1..MaxCount
	Window int64 // window length in ms, 1..MaxDuration
}

// windowCounts is a SlidingWindow's state: the counts of the window that
// begins at Start and of the window before it.
type windowCounts struct {
	Start, Prev, Cur int64
}

// roll moves st to the window that contains now, as the seed script does:
// the current count becomes the previous one when exactly one window has
// passed, and both are forgotten after two.
func (w slidingWindow) roll(st windowCounts, now int64) windowCounts {
	start := now - now%w.Window
	switch st.Start {
	case start:
	case start - w.Window:
		st.Prev, st.Cur = st.Cur, 0
	default:
		st.Prev, st.Cur = 0, 0
	}
	st.Start = start
	return st
}

// decide rolls st to now and grants or refuses cost. It returns the state to
// store when the decision is an approval of a non-zero cost. A now before the
// window the state was written in (the debug clock moved back) is taken as
// that window's start, so the counts are kept, never forgotten.
func (w slidingWindow) decide(st windowCounts, now, cost int64) (windowCounts, Decision) {
	now = max(now, st.Start)
	st = w.roll(st, now)
	left := st.Start + w.Window - now // ms until the current window ends, >= 1
	// floor(Limit - estimate) without fractions: the previous window's share
	// is rounded up, so the budget is never overstated.
	available := w.Limit - st.Cur - mulDivCeil(st.Prev, left, w.Window)
	var d Decision
	switch {
	case cost > w.Limit:
		d = denied(w.Limit, available, RetryNever)
	case cost <= available:
		d = granted(w.Limit, available, cost)
		st.Cur += cost
	default:
		d = denied(w.Limit, available, w.retryAfter(st, left, cost))
	}
	d.ResetAfter = w.resetAfter(st, left)
	return st, d
}

// retryAfter is the seed script's wait, generalised from 1 to cost and
// computed exactly, rounded up to whole milliseconds. While the current
// window alone leaves room for the cost, the wait is for the previous
// window's weight to decay enough; otherwise it is for the next window, in
// which the current count decays in turn.
func (w slidingWindow) retryAfter(st windowCounts, left, cost int64) int64 {
	var wait int64
	if st.Cur+cost <= w.Limit && st.Prev > 0 {
		wait = left - mulDivFloor(w.Limit-st.Cur-cost, w.Window, st.Prev)
	} else {
		// Here Cur+cost > Limit >= cost, so Cur >= 1.
		wait = left + mulDivCeil(w.Window, st.Cur+cost-w.Limit, st.Cur)
	}
	return max(wait, 1)
}

// resetAfter is the time until the estimate reaches zero: the current count
// weighs in until the end of the next window, the previous one until the end
// of this window.
func (w slidingWindow) resetAfter(st windowCounts, left int64) int64 {
	switch {
	case st.Cur > 0:
		return left + w.Window
	case st.Prev > 0:
		return left
	}
	return 0
}

// charge counts a refused cost into the current window of st (rolled to
// now by decide) all the same, capped at MaxCount: a FORCE charge, or a
// refusal counted (FlagCountRefused).
func (w slidingWindow) charge(st windowCounts, cost int64) windowCounts {
	st.Cur = min(st.Cur+cost, MaxCount)
	return st
}

// expiresAt is when st becomes indistinguishable from no state at all.
func (w slidingWindow) expiresAt(st windowCounts) int64 {
	switch {
	case st.Cur > 0:
		return st.Start + 2*w.Window
	case st.Prev > 0:
		return st.Start + w.Window
	}
	return st.Start
}

// adopt converts state kept under the parameters old to w's. A new limit
// needs nothing; a new window length cannot keep two aligned counts, so the
// current estimate under the old window is carried whole into the current new
// window. That is never more generous than the old state: a caller switching
// parameters back and forth never gets a fresh budget.
func (w slidingWindow) adopt(old slidingWindow, st windowCounts, now int64) windowCounts {
	if old.Window == w.Window {
		return st
	}
	now = max(now, st.Start)
	st = old.roll(st, now)
	left := st.Start + old.Window - now
	carried := st.Cur + mulDivCeil(st.Prev, left, old.Window)
	return windowCounts{Start: now - now%w.Window, Cur: carried}
}

// refund takes up to n units back, never more than was spent. A plain
// refund (since noSince) takes them from the current window, then from the
// previous one; a reservation's settlement only from the window that holds
// its charge, made at since (nothing once that window is older than the
// previous one).
func (w slidingWindow) refund(st windowCounts, now, n, since int64) windowCounts {
	st = w.roll(st, max(now, st.Start))
	switch {
	case since == noSince:
		take := min(st.Cur, n)
		st.Cur -= take
		st.Prev = max(st.Prev-(n-take), 0)
	case since >= st.Start:
		st.Cur = max(st.Cur-n, 0)
	case since >= st.Start-w.Window:
		st.Prev = max(st.Prev-n, 0)
	}
	return st
}

// slidingAlgorithm is RL.SLIDING: a record holds the window's limit and
// length, and the counts of the current window and the one before it.
type slidingAlgorithm struct{}

func (ks *keyspace) sliding(i int32) (slidingWindow, windowCounts) {
	p, st := ks.paramsOf(i), &ks.records.at(i).state
	return slidingWindow{Limit: p[0], Window: p[1]}, windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}
}

func (slidingAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	w := slidingWindow{Limit: p[0], Window: p[1]}
	var st windowCounts
	converted := false
	if i >= 0 {
		old, ost := ks.sliding(i)
		st, converted = w.adopt(old, ost, now), old != w
	}
	if cost < 0 {
		st = w.refund(st, now, -cost, v.since)
	}
	st, v.d = w.decide(st, now, max(cost, 0))
	counted := v.counts(cost)
	if counted {
		st = w.charge(st, cost)
		_, peek := w.decide(st, now, 0)
		_, again := w.decide(st, now, cost)
		v.d = v.chargedReply(v.d, peek, again)
	}
	v.write = keepState(i >= 0, cost, converted, v.d.Allowed || counted)
	v.params, v.state = [3]int64{w.Limit, w.Window}, [3]int64{st.Start, st.Prev, st.Cur}
}

func (slidingAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	w, st := ks.sliding(i)
	return w.expiresAt(st)
}

func (slidingAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	w, st := ks.sliding(i)
	st, d := w.decide(st, now, 0)
	f = append(f, Field{Name: "limit", Int: w.Limit}, Field{Name: "window_ms", Int: w.Window},
		Field{Name: "window_start_ms", Int: st.Start}, Field{Name: "previous_count", Int: st.Prev},
		Field{Name: "current_count", Int: st.Cur})
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

func (slidingAlgorithm) valid(params, st [3]int64, _ []logEntry) bool {
	return validArgs(OpSliding, params) && validTime(st[0]) && validCount(st[1]) && validCount(st[2])
}
