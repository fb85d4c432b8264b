package engine

// A decision on a global key (GLOBAL) is taken from what the region holds,
// never with a round trip: strict, from its blocks; relaxed, from its own
// counts and the others' last reported ones.

// ErrGlobalMode refuses a decision on a global key in the other mode.
var ErrGlobalMode = &Error{CodeParam, "the key is global in the other mode (STRICT or RELAXED)"}

// decideGlobal decides c on a global key.
func (s *Shard) decideGlobal(now int64, c *Command, r *Result) {
	d, granted, err := s.globalDecision(now, c)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	s.count(c, d.Allowed)
	r.Type, r.Decision = ResDecision, d
	if c.Flags&FlagPartial != 0 {
		r.addExtra("granted", granted)
	}
}

// globalDecision decides c on a global key: the decision and the units
// granted.
func (s *Shard) globalDecision(now int64, c *Command) (Decision, int64, error) {
	p := [3]int64{c.Args[0], c.Args[1], c.Args[2]}
	i, g, err := s.globalFor(now, c.Key, c.Op, c.Flags&FlagRelaxed != 0, p)
	if err != nil {
		return Decision{}, 0, err
	}
	var d Decision
	var granted int64
	if g.relaxed {
		d, granted = s.decideRelaxed(now, c, i, g)
	} else {
		d, granted = decideStrict(now, c, g)
	}
	s.keys.recharge(i)
	return d, granted, nil
}

// globalFor returns key's record and side state, creating them for op in
// the given mode with parameters p when the key is absent; a key of
// another kind, algorithm or mode is an error. The parameters of an
// existing key become p (the home converts its own state, as any
// algorithm does, when it next counts).
func (s *Shard) globalFor(now int64, key []byte, op Op, relaxed bool, p [3]int64) (int32, *globalState, error) {
	ks := &s.keys
	i := s.lookup(key, now)
	if i < 0 {
		if err := s.admit(now, 1, nil); err != nil {
			return -1, nil, err
		}
		i = ks.add(key, KindGlobal, p)
		ks.setGlobal(i, &globalState{algo: op, relaxed: relaxed, params: p, nextReq: leaseID(0, now), retry: DefaultGlobalRetry})
		return i, ks.global(i), nil
	}
	if ks.kind(i) != KindGlobal || ks.global(i).algo != op {
		return -1, nil, ErrWrongType
	}
	g := ks.global(i)
	if g.relaxed != relaxed {
		return -1, nil, ErrGlobalMode
	}
	if g.params != p && g.relaxed {
		s.adoptRelaxed(i, g, p, now)
	}
	g.params = p
	return i, g, nil
}

// decideStrict decides c from the region's blocks; it returns the decision
// and the units granted.
func decideStrict(now int64, c *Command, g *globalState) (Decision, int64) {
	g.settle(now)
	cost, limit := c.Args[3], limitOf(g.algo, g.params)
	if cost < 0 { // a refund: the units go back to the blocks they came from
		g.giveBack(-cost)
		return Decision{Allowed: true, Limit: limit, Remaining: g.held(), ResetAfter: strictReset(g, now)}, 0
	}
	g.asked, g.askedAt = satAdd(g.asked, cost), now
	held := g.held()
	want := cost
	if c.Flags&FlagPartial != 0 && cost > 0 {
		want = max(min(cost, held), 1)
	}
	var d Decision
	switch {
	case want > limit:
		d = denied(limit, held, RetryNever)
	case want <= held:
		d = granted(limit, held, want)
		g.take(want, now)
	default:
		d = denied(limit, held, max(g.retry, 1))
		want = 0
	}
	d.ResetAfter = strictReset(g, now)
	return d, want
}

// strictReset is a strict key's reset_after_ms, while the region holds or
// used any block: for a windowed algorithm, the end of the window its
// blocks were counted in (and the next one's, for the sliding window,
// whose estimate carries the count over); for a bucket, the time it takes
// to drain from full, a bound, since the level is kept at the home.
func strictReset(g *globalState, now int64) int64 {
	if len(g.blocks) == 0 {
		return 0
	}
	switch g.algo {
	case OpFixed:
		return windowEnd(g.params, now) - now
	case OpSliding:
		return windowEnd(g.params, now) - now + g.params[1]
	}
	units, period := rateOf(g.algo, g.params)
	return mulDivCeil(limitOf(g.algo, g.params), period, units)
}
