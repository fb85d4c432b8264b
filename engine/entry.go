package engine

// The accessors below read and write a record's parameters and state under
// the names each algorithm gives them. A record stores three parameters and
// three state words; what they mean depends on its kind.

func (ks *keyspace) sliding(i int32) (SlidingWindow, windowCounts) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return SlidingWindow{Limit: p[0], Window: p[1]}, windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}
}

func (ks *keyspace) setSliding(i int32, w SlidingWindow, st windowCounts) {
	ks.set(i, KindSliding, [3]int64{w.Limit, w.Window}, [3]int64{st.Start, st.Prev, st.Cur})
}

func (ks *keyspace) fixed(i int32) (FixedWindow, windowCount) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return FixedWindow{Limit: p[0], Window: p[1]}, windowCount{Start: st[0], Count: st[1]}
}

func (ks *keyspace) setFixed(i int32, w FixedWindow, st windowCount) {
	ks.set(i, KindFixed, [3]int64{w.Limit, w.Window}, [3]int64{st.Start, st.Count})
}

func (ks *keyspace) slidingLog(i int32) (SlidingLog, []logEntry) {
	p := ks.paramsOf(i)
	return SlidingLog{Limit: p[0], Window: p[1]}, ks.log(i)
}

func (ks *keyspace) setSlidingLog(i int32, l SlidingLog, entries []logEntry) {
	ks.set(i, KindLog, [3]int64{l.Limit, l.Window}, [3]int64{})
	ks.setLog(i, entries)
}

func (ks *keyspace) bucket(i int32) (Bucket, bucketLevel) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return Bucket{Capacity: p[0], Rate: p[1], Period: p[2]}, bucketLevel{Whole: st[0], Frac: st[1], Last: st[2]}
}

func (ks *keyspace) setBucket(i int32, kind Kind, b Bucket, st bucketLevel) {
	ks.set(i, kind, [3]int64{b.Capacity, b.Rate, b.Period}, [3]int64{st.Whole, st.Frac, st.Last})
}

func (ks *keyspace) throttle(i int32) (Throttle, int64) {
	p := ks.paramsOf(i)
	return Throttle{MaxBurst: p[0], Count: p[1], Period: p[2]}, ks.records[i].state[0]
}

func (ks *keyspace) setThrottle(i int32, t Throttle, tat int64) {
	ks.set(i, KindThrottle, [3]int64{t.MaxBurst, t.Count, t.Period}, [3]int64{tat})
}

// expiresAt is the first instant (ms) at which record i's state is back to
// "never seen"; from then on the key no longer exists.
func (ks *keyspace) expiresAt(i int32) int64 {
	switch ks.kind(i) {
	case KindSliding:
		w, st := ks.sliding(i)
		return w.expiresAt(st)
	case KindFixed:
		w, st := ks.fixed(i)
		return w.expiresAt(st)
	case KindLog:
		l, entries := ks.slidingLog(i)
		return l.expiresAt(entries)
	case KindToken, KindLeaky, KindGCRA, KindShape:
		b, st := ks.bucket(i)
		return b.expiresAt(st)
	case KindThrottle:
		_, tat := ks.throttle(i)
		return throttleExpiresAt(tat)
	case KindQuota:
		q, st := ks.quota(i)
		return q.expiresAt(st)
	case KindLease:
		return leasesExpireAt(ks.log(i), ks.records[i].state[0])
	case KindString:
		return stringExpiresAt(ks.records[i].state)
	}
	return 0
}
