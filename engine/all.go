package engine

// MaxAllLimits bounds the limits one RL.ALL checks.
const MaxAllLimits = 16

// allMember reports whether op may be one of RL.ALL's limits: the decision
// commands with the common reply, and RL.CHECK. (ErrAllMember answers a
// group commands would never build: a limit that is not one, PARTIAL, FORCE
// on some limits only, a key twice, or a wrong count.)
func allMember(op Op) bool {
	return policyOp(op) || op == OpCheck
}

// all applies RL.ALL: cmds[0] is the head, whose Args[0] counts the limits
// that follow it in cmds. Every limit is evaluated against the state before
// any of them; if all allow, all are committed, and if any denies, none is:
// nothing is consumed anywhere. out[0] is the overall decision, out[1:] the
// limits' own replies.
func (s *Shard) all(now int64, cmds []Command, out []Result) {
	head, members := &out[0], cmds[1:]
	clear(out[1:]) // Apply cleared the head only
	head.Members = len(members)
	if err := checkGroup(cmds); err != nil {
		head.Type, head.Err = ResError, err
		return
	}
	var recs [MaxAllLimits]int32
	verdicts := &s.verdicts
	allowed := true
	for j := range members {
		recs[j] = s.lookup(members[j].Key, now)
		if err := s.evaluate(now, &members[j], recs[j], &verdicts[j], noSince); err != nil {
			head.Type, head.Err = ResError, err
			return
		}
		allowed = allowed && verdicts[j].d.Allowed
	}
	// A FORCE charge counts on every limit, whether all of them had room
	// for it or not: each limit's verdict says what to write.
	apply := allowed || members[0].Flags&FlagForce != 0
	if apply {
		if err := s.admitGroup(now, recs[:len(members)], verdicts[:len(members)]); err != nil {
			head.Type, head.Err = ResError, err
			return
		}
	}
	for j := range members {
		v := &verdicts[j]
		if apply {
			s.commit(now, members[j].Key, recs[j], v)
		} else if v.d.Allowed && members[j].Args[3] > 0 {
			// Allowed on its own but not consumed: report its budget as
			// it stands, which is what a peek says.
			peek := members[j]
			peek.Args[3] = 0
			p := &s.verdict
			_ = s.evaluate(now, &peek, recs[j], p, noSince) // it just succeeded with a cost
			p.d.Allowed = true
			v.d = p.d
		}
		s.reply(&members[j], v, &out[1+j])
	}
	head.Type, head.Decision = ResDecision, overall(verdicts[:len(members)], allowed)
}

// admitGroup makes room for the keys a group creates, keeping the records
// it writes.
func (s *Shard) admitGroup(now int64, recs []int32, verdicts []verdict) error {
	created := 0
	var keep [MaxAllLimits]int32
	kept := 0
	for j, i := range recs {
		switch {
		case i >= 0:
			keep[kept] = i
			kept++
		case verdicts[j].write:
			created++
		}
	}
	return s.admit(now, created, keep[:kept])
}

// checkGroup verifies an RL.ALL group's shape.
func checkGroup(cmds []Command) error {
	members := cmds[1:]
	if len(members) < 1 || len(members) > MaxAllLimits || int64(len(members)) != cmds[0].Args[0] {
		return ErrAllMember
	}
	for j := range members {
		if !allMember(members[j].Op) || members[j].Flags&(FlagPartial|FlagGlobal) != 0 ||
			members[j].Flags&FlagForce != members[0].Flags&FlagForce {
			return ErrAllMember
		}
		for k := range j {
			if string(members[k].Key) == string(members[j].Key) {
				return ErrAllMember
			}
		}
	}
	return nil
}

// overall is RL.ALL's decision from its limits': allowed when all allow;
// the limit and remaining of the limit with the fewest units left, the
// longest wait among those that deny (never, if one never can), and the
// longest time until all are back to full.
func overall(vs []verdict, allowed bool) Decision {
	d := Decision{Allowed: allowed}
	for j := range vs {
		m := vs[j].d
		if j == 0 || m.Remaining < d.Remaining {
			d.Limit, d.Remaining = m.Limit, m.Remaining
		}
		d.ResetAfter = max(d.ResetAfter, m.ResetAfter)
		if !m.Allowed && d.RetryAfter != RetryNever {
			if m.RetryAfter == RetryNever {
				d.RetryAfter = RetryNever
			} else {
				d.RetryAfter = max(d.RetryAfter, m.RetryAfter)
			}
		}
	}
	return d
}
