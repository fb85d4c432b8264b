package engine

// decide applies a decision op. State is written when a non-zero cost is
// granted, and when the call's parameters differ from the key's (the state
// is converted to them, granted or not, so that later answers and waits
// follow from one stored state). Otherwise a refusal or a peek (cost 0)
// leaves the shard exactly as it was; a peek never writes, and a key is only
// ever created by a granted cost.
func (s *Shard) decide(now int64, c *Command, r *Result) {
	i, e := s.lookup(c.Key, now)
	kind := c.Op.kind()
	if e != nil && e.kind != kind {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	a, cost := c.Args, c.Args[3]
	store := func(converted bool, allowed bool) bool {
		return cost > 0 && (allowed || (converted && e != nil))
	}
	var d Decision
	switch kind {
	case KindSliding:
		w := SlidingWindow{Limit: a[0], Window: a[1]}
		var st windowCounts
		converted := false
		if e != nil {
			old, ost := e.sliding()
			st, converted = w.adopt(old, ost, now), old != w
		}
		st, d = w.Decide(st, now, cost)
		if store(converted, d.Allowed) {
			s.slotFor(i, c.Key).setSliding(w, st)
		}
	case KindFixed:
		w := FixedWindow{Limit: a[0], Window: a[1]}
		var st windowCount
		converted := false
		if e != nil {
			old, ost := e.fixed()
			st, converted = w.adopt(old, ost, now), old != w
		}
		st, d = w.Decide(st, now, cost)
		if store(converted, d.Allowed) {
			s.slotFor(i, c.Key).setFixed(w, st)
		}
	case KindLog:
		// Timestamps are absolute: new parameters need no conversion.
		l := SlidingLog{Limit: a[0], Window: a[1]}
		var entries []logEntry
		if e != nil {
			entries = e.log
		}
		entries, d = l.Decide(entries, now, cost)
		if d.Allowed && cost > 0 {
			if i < 0 {
				i = s.keys.add(c.Key)
			}
			s.keys.setLog(i, l, entries)
		}
	case KindToken, KindLeaky, KindGCRA:
		b := Bucket{Capacity: a[0], Rate: a[1], Period: a[2]}
		if kind == KindGCRA {
			b.Capacity++ // RL.GCRA takes redis-cell's max_burst: the limit is burst+1
		}
		var st bucketLevel
		converted := false
		if e != nil {
			old, ost := e.bucket()
			st, converted = b.adopt(old, ost, now), old != b
		}
		st, d = b.Decide(st, now, cost)
		if store(converted, d.Allowed) {
			s.slotFor(i, c.Key).setBucket(kind, b, st)
		}
	case KindThrottle:
		t := Throttle{MaxBurst: a[0], Count: a[1], Period: a[2]}
		var tat int64
		if e != nil {
			_, tat = e.throttle()
		}
		tat, reply := t.Decide(tat, now, cost)
		if !reply.Limited && cost > 0 {
			s.slotFor(i, c.Key).setThrottle(t, tat)
		}
		s.count(!reply.Limited)
		r.Type, r.Throttle = ResThrottle, reply
		return
	}
	s.count(d.Allowed)
	r.Type, r.Decision = ResDecision, d
}

func (s *Shard) count(allowed bool) {
	if allowed {
		s.stat.Allowed++
	} else {
		s.stat.Denied++
	}
}
