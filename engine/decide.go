package engine

// decide applies a decision op. State is written only when a non-zero cost is
// granted: a refusal or a peek (cost 0) leaves the shard exactly as it was,
// and a key is created only by its first granted cost.
func (s *Shard) decide(now int64, c *Command, r *Result) {
	i, e := s.lookup(c.Key, now)
	kind := c.Op.kind()
	if e != nil && e.kind != kind {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	a, cost := c.Args, c.Args[3]
	var d Decision
	switch kind {
	case KindSliding:
		w := SlidingWindow{Limit: a[0], Window: a[1]}
		var st windowCounts
		if e != nil {
			old, ost := e.sliding()
			st = w.adopt(old, ost, now)
		}
		st, d = w.Decide(st, now, cost)
		if d.Allowed && cost > 0 {
			s.slotFor(i, c.Key).setSliding(w, st)
		}
	case KindFixed:
		w := FixedWindow{Limit: a[0], Window: a[1]}
		var st windowCount
		if e != nil {
			old, ost := e.fixed()
			st = w.adopt(old, ost, now)
		}
		st, d = w.Decide(st, now, cost)
		if d.Allowed && cost > 0 {
			s.slotFor(i, c.Key).setFixed(w, st)
		}
	case KindLog:
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
		if e != nil {
			old, ost := e.bucket()
			st = b.adopt(old, ost, now)
		}
		st, d = b.Decide(st, now, cost)
		if d.Allowed && cost > 0 {
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
