package engine

// decide applies a decision op. State is written when a non-zero cost is
// granted, and when the call's parameters differ from the key's (the state
// is converted to them, granted or not, so that later answers and waits
// follow from one stored state). Otherwise a refusal or a peek (cost 0)
// leaves the shard exactly as it was; a peek never writes, and a key is only
// ever created by a granted cost.
func (s *Shard) decide(now int64, c *Command, r *Result) {
	ks := &s.keys
	i := s.lookup(c.Key, now)
	kind := c.Op.kind()
	if i >= 0 && ks.kind(i) != kind {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	a, cost := c.Args, c.Args[3]
	// store reports whether to write: a granted cost, or a conversion to new
	// parameters of a key that exists (never for a peek).
	store := func(converted, allowed bool) bool {
		return cost > 0 && (allowed || (converted && i >= 0))
	}
	var d Decision
	switch kind {
	case KindSliding:
		w := SlidingWindow{Limit: a[0], Window: a[1]}
		var st windowCounts
		converted := false
		if i >= 0 {
			old, ost := ks.sliding(i)
			st, converted = w.adopt(old, ost, now), old != w
		}
		st, d = w.Decide(st, now, cost)
		if store(converted, d.Allowed) {
			ks.setSliding(s.slot(i, c.Key, kind, a), w, st)
		}
	case KindFixed:
		w := FixedWindow{Limit: a[0], Window: a[1]}
		var st windowCount
		converted := false
		if i >= 0 {
			old, ost := ks.fixed(i)
			st, converted = w.adopt(old, ost, now), old != w
		}
		st, d = w.Decide(st, now, cost)
		if store(converted, d.Allowed) {
			ks.setFixed(s.slot(i, c.Key, kind, a), w, st)
		}
	case KindLog:
		// Timestamps are absolute: new parameters need no conversion.
		l := SlidingLog{Limit: a[0], Window: a[1]}
		var entries []logEntry
		if i >= 0 {
			entries = ks.log(i)
		}
		entries, d = l.Decide(entries, now, cost)
		if d.Allowed && cost > 0 {
			ks.setSlidingLog(s.slot(i, c.Key, kind, a), l, entries)
		}
	case KindToken, KindLeaky, KindGCRA:
		b := Bucket{Capacity: a[0], Rate: a[1], Period: a[2]}
		if kind == KindGCRA {
			b.Capacity++ // RL.GCRA takes redis-cell's max_burst: the limit is burst+1
		}
		var st bucketLevel
		converted := false
		if i >= 0 {
			old, ost := ks.bucket(i)
			st, converted = b.adopt(old, ost, now), old != b
		}
		st, d = b.Decide(st, now, cost)
		if store(converted, d.Allowed) {
			ks.setBucket(s.slot(i, c.Key, kind, [4]int64{b.Capacity, b.Rate, b.Period}), kind, b, st)
		}
	case KindThrottle:
		t := Throttle{MaxBurst: a[0], Count: a[1], Period: a[2]}
		var tat int64
		if i >= 0 {
			_, tat = ks.throttle(i)
		}
		tat, reply := t.Decide(tat, now, cost)
		if !reply.Limited && cost > 0 {
			ks.setThrottle(s.slot(i, c.Key, kind, a), t, tat)
		}
		s.count(!reply.Limited)
		r.Type, r.Throttle = ResThrottle, reply
		return
	}
	s.count(d.Allowed)
	r.Type, r.Decision = ResDecision, d
}

// slot returns record i, or a new record for key when i is -1, created with
// the parameters it is about to be given (so they are interned once).
func (s *Shard) slot(i int32, key []byte, kind Kind, p [4]int64) int32 {
	if i < 0 {
		i = s.keys.add(key, kind, [3]int64{p[0], p[1], p[2]})
	}
	return i
}

func (s *Shard) count(allowed bool) {
	if allowed {
		s.stat.Allowed++
	} else {
		s.stat.Denied++
	}
}
