package engine

// The accessors below read a record's parameters and state under the names
// each algorithm gives them. A record stores three parameters and three
// state words; what they mean depends on its kind. Decisions write them back
// through keyspace.set, as the verdict's params and state (decide.go).

func (ks *keyspace) sliding(i int32) (SlidingWindow, windowCounts) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return SlidingWindow{Limit: p[0], Window: p[1]}, windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}
}

func (ks *keyspace) fixed(i int32) (FixedWindow, windowCount) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return FixedWindow{Limit: p[0], Window: p[1]}, windowCount{Start: st[0], Count: st[1]}
}

func (ks *keyspace) slidingLog(i int32) (SlidingLog, []logEntry) {
	p := ks.paramsOf(i)
	return SlidingLog{Limit: p[0], Window: p[1]}, ks.log(i)
}

func (ks *keyspace) bucket(i int32) (Bucket, bucketLevel) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return Bucket{Capacity: p[0], Rate: p[1], Period: p[2]}, bucketLevel{Whole: st[0], Frac: st[1], Last: st[2]}
}

func (ks *keyspace) throttle(i int32) (Throttle, int64) {
	p := ks.paramsOf(i)
	return Throttle{MaxBurst: p[0], Count: p[1], Period: p[2]}, ks.records[i].state[0]
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
