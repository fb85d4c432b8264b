package engine

// entry is one key's limiter: its kind, the parameters of its latest approved
// call, and its state. The meaning of params and state depends on the kind;
// the accessors below give them names. Parameters are kept so that a call
// with different ones can convert the state (see the adopt methods) and so
// that RL.INFO can show them.
type entry struct {
	key    string
	kind   Kind
	params [3]int64
	state  [3]int64
	log    []logEntry // KindLog only
}

func (e *entry) sliding() (SlidingWindow, windowCounts) {
	return SlidingWindow{Limit: e.params[0], Window: e.params[1]},
		windowCounts{Start: e.state[0], Prev: e.state[1], Cur: e.state[2]}
}

func (e *entry) setSliding(w SlidingWindow, st windowCounts) {
	e.kind = KindSliding
	e.params = [3]int64{w.Limit, w.Window}
	e.state = [3]int64{st.Start, st.Prev, st.Cur}
}

func (e *entry) fixed() (FixedWindow, windowCount) {
	return FixedWindow{Limit: e.params[0], Window: e.params[1]},
		windowCount{Start: e.state[0], Count: e.state[1]}
}

func (e *entry) setFixed(w FixedWindow, st windowCount) {
	e.kind = KindFixed
	e.params = [3]int64{w.Limit, w.Window}
	e.state = [3]int64{st.Start, st.Count}
}

func (e *entry) slidingLog() (SlidingLog, []logEntry) {
	return SlidingLog{Limit: e.params[0], Window: e.params[1]}, e.log
}

func (e *entry) setSlidingLog(l SlidingLog, entries []logEntry) {
	e.kind = KindLog
	e.params = [3]int64{l.Limit, l.Window}
	e.log = entries
}

func (e *entry) bucket() (Bucket, bucketLevel) {
	return Bucket{Capacity: e.params[0], Rate: e.params[1], Period: e.params[2]},
		bucketLevel{Whole: e.state[0], Frac: e.state[1], Last: e.state[2]}
}

func (e *entry) setBucket(kind Kind, b Bucket, st bucketLevel) {
	e.kind = kind
	e.params = [3]int64{b.Capacity, b.Rate, b.Period}
	e.state = [3]int64{st.Whole, st.Frac, st.Last}
}

func (e *entry) throttle() (Throttle, int64) {
	return Throttle{MaxBurst: e.params[0], Count: e.params[1], Period: e.params[2]}, e.state[0]
}

func (e *entry) setThrottle(t Throttle, tat int64) {
	e.kind = KindThrottle
	e.params = [3]int64{t.MaxBurst, t.Count, t.Period}
	e.state = [3]int64{tat}
}

// expiresAt is the first instant (ms) at which the entry's state is back to
// "never seen"; from then on the key no longer exists.
func (e *entry) expiresAt() int64 {
	switch e.kind {
	case KindSliding:
		w, st := e.sliding()
		return w.expiresAt(st)
	case KindFixed:
		w, st := e.fixed()
		return w.expiresAt(st)
	case KindLog:
		l, entries := e.slidingLog()
		return l.expiresAt(entries)
	case KindToken, KindLeaky, KindGCRA:
		b, st := e.bucket()
		return b.expiresAt(st)
	case KindThrottle:
		_, tat := e.throttle()
		return throttleExpiresAt(tat)
	}
	return 0
}
