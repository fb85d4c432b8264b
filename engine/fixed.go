package engine

// fixedWindow counts units in windows aligned to multiples of Window since the
// Unix epoch; the count starts again at zero when a window begins. It is the
// cheapest limiter and the one an INCR+EXPIRE script implements, with the
// known cost that a burst at the end of one window and another at the start
// of the next admit twice the limit in a short span.
type fixedWindow struct {
	Limit  int64 // units per window, 1..MaxCount
	Window int64 // window length in ms, 1..MaxDuration
}

// windowCount is a FixedWindow's state: the count of the window beginning at
// Start.
type windowCount struct {
	Start, Count int64
}

// decide grants or refuses cost in the window that contains now. A now before
// the window the count was written in (the debug clock moved back) counts in
// that window, so the count is kept, never forgotten.
func (w fixedWindow) decide(st windowCount, now, cost int64) (windowCount, Decision) {
	now = max(now, st.Start)
	start := now - now%w.Window
	return decideInWindow(w.Limit, st, start, start+w.Window, now, cost)
}

// decideInWindow grants or refuses cost against limit in the window
// [start, end) that holds now, counting from zero when st is of an earlier
// window: the fixed window's decision, and the calendar quota's.
func decideInWindow(limit int64, st windowCount, start, end, now, cost int64) (windowCount, Decision) {
	if st.Start != start {
		st = windowCount{Start: start}
	}
	left := end - now
	available := limit - st.Count
	var d Decision
	switch {
	case cost > limit:
		d = denied(limit, available, RetryNever)
	case cost <= available:
		d = granted(limit, available, cost)
		st.Count += cost
	default:
		d = denied(limit, available, left)
	}
	if st.Count > 0 {
		d.ResetAfter = left
	}
	return st, d
}

// chargeInWindow counts a refused cost into st, the count of the window
// that ends at end, all the same (capped at MaxCount): a FORCE charge, or
// a refusal counted (FlagCountRefused). The reply is what st answers then.
func (v *verdict) chargeInWindow(limit int64, st windowCount, end, now, cost int64) windowCount {
	st.Count = min(st.Count+cost, MaxCount)
	now = max(now, st.Start)
	_, peek := decideInWindow(limit, st, st.Start, end, now, 0)
	_, again := decideInWindow(limit, st, st.Start, end, now, cost)
	v.d = v.chargedReply(v.d, peek, again)
	return st
}

// expiresAt is when st is back to "never seen": when its window ends, or at
// once when nothing is counted.
func (w fixedWindow) expiresAt(st windowCount) int64 {
	if st.Count == 0 { // a refund gave everything back
		return st.Start
	}
	return st.Start + w.Window
}

// adopt converts state kept under old to w's: the count of a window still in
// progress is carried into the current new window.
func (w fixedWindow) adopt(old fixedWindow, st windowCount, now int64) windowCount {
	if old.Window == w.Window {
		return st
	}
	if now >= st.Start+old.Window {
		return windowCount{}
	}
	now = max(now, st.Start)
	return windowCount{Start: now - now%w.Window, Count: st.Count}
}

// refund takes up to n units back from the window in progress; a
// reservation's settlement (since, when it was made, not noSince) only
// while the window that holds its charge is in progress.
func (w fixedWindow) refund(st windowCount, now, n, since int64) windowCount {
	if now = max(now, st.Start); now >= st.Start+w.Window {
		return windowCount{}
	}
	if since == noSince || since >= st.Start {
		st.Count = max(st.Count-n, 0)
	}
	return st
}

// fixedAlgorithm is RL.FIXED: a record holds the window's limit and length,
// and the count of the window it was written in.
type fixedAlgorithm struct{}

func (ks *keyspace) fixed(i int32) (fixedWindow, windowCount) {
	p, st := ks.paramsOf(i), &ks.records.at(i).state
	return fixedWindow{Limit: p[0], Window: p[1]}, windowCount{Start: st[0], Count: st[1]}
}

func (fixedAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	w := fixedWindow{Limit: p[0], Window: p[1]}
	var st windowCount
	converted := false
	if i >= 0 {
		old, ost := ks.fixed(i)
		st, converted = w.adopt(old, ost, now), old != w
	}
	if cost < 0 {
		st = w.refund(st, now, -cost, v.since)
	}
	st, v.d = w.decide(st, now, max(cost, 0))
	counted := v.counts(cost)
	if counted {
		st = v.chargeInWindow(w.Limit, st, st.Start+w.Window, now, cost)
	}
	v.write = keepState(i >= 0, cost, converted, v.d.Allowed || counted)
	v.params, v.state = [3]int64{w.Limit, w.Window}, [3]int64{st.Start, st.Count}
}

func (fixedAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	w, st := ks.fixed(i)
	return w.expiresAt(st)
}

func (fixedAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	w, st := ks.fixed(i)
	st, d := w.decide(st, now, 0)
	f = append(f, Field{Name: "limit", Int: w.Limit}, Field{Name: "window_ms", Int: w.Window},
		Field{Name: "window_start_ms", Int: st.Start}, Field{Name: "count", Int: st.Count})
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

func (fixedAlgorithm) valid(params, st [3]int64, _ []logEntry) bool {
	return validArgs(OpFixed, params) && validTime(st[0]) && validCount(st[1]) && st[2] == 0
}
