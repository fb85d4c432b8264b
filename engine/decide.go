package engine

// A decision op is evaluated, then committed. evaluate computes the verdict
// (the reply, and the state to write) without changing the shard; commit
// writes it. RL.ALL evaluates every limit first and commits all or none.
//
// State is written when a non-zero cost is granted or refunded, and when the
// call's parameters differ from the key's (the state is converted to them,
// granted or not, so that later answers and waits follow from one stored
// state). A refusal with the key's own parameters, or a peek (cost 0),
// leaves the shard exactly as it was, and a key is only ever created by a
// granted cost.

// verdict is what evaluating a decision op concludes.
type verdict struct {
	d         Decision
	throttle  ThrottleReply // CL.THROTTLE's reply, instead of d
	extra     int64         // the algorithm's extra field, if its row names one
	granted   int64         // PARTIAL's granted
	shadow    bool          // a shadow policy's check: always allowed
	wouldDeny bool          // a shadow policy's check its policy would deny
	// countRefused: a refused cost is counted as spent (FlagCountRefused);
	// force: so is a cost that does not fit (FlagForce), a charge that
	// always counts. Set before the algorithm evaluates, which reads them.
	countRefused, force bool
	// since is when the reservation a refund settles was made (noSince: a
	// plain refund): an algorithm that can tell when its units were spent
	// gives back only those the reservation's charge still weighs.
	since   int64
	policy  *policy // RL.CHECK's policy
	write   bool
	kind    Kind
	params  [3]int64
	state   [3]int64
	log     []logEntry // a logKeeper's entries to store (before recording)
	logCost int64      // RL.LOG: units to record at now on commit
}

// noSince is a verdict's since for a refund that settles no reservation.
const noSince = -1

// decide evaluates and commits a decision op.
func (s *Shard) decide(now int64, c *Command, r *Result) {
	if c.Flags&FlagGlobal != 0 {
		s.decideGlobal(now, c, r)
		return
	}
	if c.Op == OpCheck {
		if p := s.policies[string(c.Value)]; p != nil && p.global {
			s.checkGlobal(now, c, p, r)
			return
		}
	}
	v, err := s.applyDecision(now, c, noSince)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	s.reply(c, v, r)
}

// applyDecision evaluates decision op c, makes room for the key it
// creates, and commits it; a refund settles the reservation made at since
// (noSince: none). The verdict is the shard's scratch.
func (s *Shard) applyDecision(now int64, c *Command, since int64) (*verdict, error) {
	i := s.lookup(c.Key, now)
	v := &s.verdict
	err := s.evaluate(now, c, i, v, since)
	if err == nil && v.write && i < 0 {
		err = s.admit(now, 1, nil)
	}
	if err != nil {
		return nil, err
	}
	s.commit(now, c.Key, i, v)
	return v, nil
}

// reply fills r from a verdict and counts the decision. The extra fields
// are in the order Result.Extras says; the algorithm's is its row's.
func (s *Shard) reply(c *Command, v *verdict, r *Result) {
	if c.Op.Spec().cellReply {
		s.count(c, !v.throttle.Limited)
		r.Type, r.Throttle = ResThrottle, v.throttle
		return
	}
	s.count(c, v.d.Allowed)
	if v.policy != nil {
		v.policy.countCheck(v)
	}
	r.Type, r.Decision = ResDecision, v.d
	if c.Flags&FlagPartial != 0 {
		r.addExtra("granted", v.granted)
	}
	if name := kinds[v.kind].extra; name != "" {
		r.addExtra(name, v.extra)
	}
	if v.policy != nil { // every RL.CHECK: RESP2 replies read by position
		denied := int64(0)
		if v.wouldDeny {
			denied = 1
			s.stat.ShadowDenied++
		}
		r.addExtra("shadow_denied", denied)
	}
}

func (r *Result) addExtra(name string, v int64) {
	r.Extras[r.NExtras] = Extra{Name: name, Value: v}
	r.NExtras++
}

// evaluate computes into v the verdict of decision op c on record i (-1: the
// key is absent); a refund settles the reservation made at since (noSince:
// none). It changes nothing. (The verdict is written in place: it is large,
// and this is the path every decision takes.)
func (s *Shard) evaluate(now int64, c *Command, i int32, v *verdict, since int64) error {
	if c.Op == OpCheck {
		return s.evaluateCheck(now, c, i, v)
	}
	kind := c.Op.kind()
	if i >= 0 && s.keys.kind(i) != kind {
		return ErrWrongType
	}
	cost := c.Args[3]
	if c.Flags&FlagPartial == 0 || cost <= 0 {
		s.evaluateCost(now, c, i, kind, cost, v, since)
		if cost < 0 {
			// A refund is always granted, even on a key still over a
			// limit lowered since it was spent.
			v.d.Allowed, v.d.RetryAfter = true, 0
		}
		return nil
	}
	// PARTIAL: grant what is available, up to the cost; when nothing is,
	// the refusal says when one unit will be.
	available := int64(0)
	if s.evaluateCost(now, c, i, kind, 0, v, noSince); v.d.Allowed {
		available = v.d.Remaining
	}
	s.evaluateCost(now, c, i, kind, max(min(cost, available), 1), v, noSince)
	if v.d.Allowed {
		v.granted = min(cost, available)
	}
	return nil
}

// keepState reports whether a state computed for cost is to be written: a
// granted (or, with FlagCountRefused, refused) or refunded cost, or a
// conversion to new parameters of a key that exists (never for a peek).
func keepState(exists bool, cost int64, converted, allowed bool) bool {
	return exists && cost < 0 || cost > 0 && (allowed || (converted && exists))
}

// evaluateCost is evaluate for one cost (negative: a refund), by the
// algorithm of kind, from the command's parameters.
func (s *Shard) evaluateCost(now int64, c *Command, i int32, kind Kind, cost int64, v *verdict, since int64) {
	*v = verdict{kind: kind, countRefused: c.Flags&FlagCountRefused != 0, force: c.Flags&FlagForce != 0, since: since}
	c.Op.Spec().algo.evaluate(&s.keys, now, [3]int64{c.Args[0], c.Args[1], c.Args[2]}, i, cost, v)
}

// commit writes a verdict for key, in record i or a new one.
func (s *Shard) commit(now int64, key []byte, i int32, v *verdict) {
	if !v.write {
		return
	}
	ks := &s.keys
	if i < 0 {
		i = ks.add(key, v.kind, v.params)
	} else if ks.kind(i) != v.kind {
		ks.dropExtras(i) // RL.CHECK replacing a key of its policy's former algorithm
	}
	ks.set(i, v.kind, v.params, v.state)
	if kinds[v.kind].log != nil {
		ks.setLog(i, recordLog(v.log, now, v.logCost))
	}
}

// counts reports whether a verdict's refused cost is counted all the same:
// FlagForce or FlagCountRefused, a cost to count, and a refusal.
func (v *verdict) counts(cost int64) bool {
	return (v.force || v.countRefused) && cost > 0 && !v.d.Allowed
}

// chargedReply is the reply to a refused cost that was counted all the
// same: what the state after it answers to a peek, its remaining below
// zero by the debt; refused all the same, since the cost took the key past
// its limit. A FORCE charge's wait is the peek's, until the debt is paid
// off; a refusal counted (FlagCountRefused) keeps its meaning, the wait
// until the same cost would be allowed again (again), or never.
func (v *verdict) chargedReply(refused, peek, again Decision) Decision {
	d := peek
	d.Allowed = false
	if !v.force {
		d.RetryAfter = again.RetryAfter
		if refused.RetryAfter == RetryNever {
			d.RetryAfter = RetryNever
		}
	}
	return d
}

// count counts a decision of c: by its op, and by its key among the
// heaviest keys (RL.TOP).
func (s *Shard) count(c *Command, allowed bool) {
	if allowed {
		s.decisions[c.Op].Allowed++
	} else {
		s.decisions[c.Op].Denied++
	}
	s.countTop(c.Key, allowed)
}
