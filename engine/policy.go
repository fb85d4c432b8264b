package engine

import (
	"fmt"
	"slices"
	"strconv"
)

// Policies are named limits kept in the shard (RL.POLICY SET), so that
// clients say which limit applies to a key by name (RL.CHECK orders user:ada)
// and an operator changes a limit for every client at once. They are part of
// the shard's state: replicated with it, in its snapshots and its digest.
// Every shard holds every policy; the server sets and deletes them on all.

// definition is what RL.POLICY SET says of a policy: the decision it runs
// and that command's parameters, as the command takes them.
type definition struct {
	op     Op       // a decision with a Word, see policyOp
	params [3]int64 // the command's parameters (RL.GCRA: burst)
	// shadow makes the policy allow everything while still counting, and
	// reporting, what it would have denied: a way to try a limit on live
	// traffic before enforcing it.
	shadow bool
	// global makes the policy's keys global (GLOBAL), relaxed or strict.
	global, relaxed bool
}

// policy is a definition and the counters RL.POLICY GET reports. The
// counters are statistics of this process, like INFO's, not replicated
// state.
type policy struct {
	definition
	// previous is the op the policy ran before its algorithm last changed
	// (opNone if it never did): RL.CHECK restarts a key of that algorithm
	// under the new one, and refuses any other with WRONGTYPE, so that two
	// policies of different algorithms cannot reset each other's keys.
	// Replicated state: in snapshots and the digest.
	previous                     Op
	checks, denied, shadowDenied int64
}

// maxPolicyName bounds a policy's name.
const maxPolicyName = 200

// policyOp reports whether op is a decision a policy may run: those with a
// Word. CL.THROTTLE has its own reply, and leases need their id back.
func policyOp(op Op) bool { return op.Known() && op.Spec().Word != "" }

// checkPolicyName checks the name RL.CHECK, RL.POLICY DEL and GET take.
func checkPolicyName(c Command) error {
	if !validPolicyName(c.Value) {
		return errPolicyName
	}
	return nil
}

// checkPolicyListName checks RL.POLICY LIST's empty name or GET's name.
func checkPolicyListName(c Command) error {
	if len(c.Value) == 0 {
		return nil
	}
	return checkPolicyName(c)
}

// checkPolicySet checks RL.POLICY SET: a name, and a decision a policy may
// run (Args[3]) with parameters it takes.
func checkPolicySet(c Command) error {
	if err := checkPolicyName(c); err != nil {
		return err
	}
	op := Op(c.Args[3])
	if !policyOp(op) {
		return paramError("no policy runs op %d", op)
	}
	run := Command{Op: op, Flags: c.Flags &^ FlagShadow, Args: [4]int64{c.Args[0], c.Args[1], c.Args[2]}}
	if c.Flags&FlagShadow != 0 && c.Flags&FlagGlobal != 0 {
		return paramError("SHADOW excludes GLOBAL")
	}
	if run.Flags&^op.Spec().Flags != 0 {
		return paramError("a %s policy cannot be GLOBAL%s", op.Spec().Word, map[bool]string{true: " RELAXED"}[c.Flags&FlagRelaxed != 0])
	}
	return run.Check()
}

// errPolicyName is the error for a name validPolicyName refuses.
var errPolicyName = paramError("a policy name is 1 to %d letters, digits or _ - . /", maxPolicyName)

// evaluateCheck evaluates RL.CHECK: the policy named by c.Value, applied to
// c's key with c's cost.
func (s *Shard) evaluateCheck(now int64, c *Command, i int32, v *verdict) error {
	p, ok := s.policies[string(c.Value)]
	if !ok {
		return &Error{CodeNoPolicy, fmt.Sprintf("%s '%s'", ErrNoPolicy.Msg, c.Value)}
	}
	run := Command{Op: p.op, Flags: c.Flags & (FlagPartial | FlagForce), Key: c.Key}
	copy(run.Args[:3], p.params[:])
	run.Args[3] = c.Args[3]
	if i >= 0 {
		if k := s.keys.kind(i); k != p.op.kind() {
			if p.previous == opNone || k != p.previous.kind() {
				return ErrWrongType
			}
			// The policy's algorithm changed since the key was made: the
			// key starts afresh under the new one (commit replaces it).
			i = -1
		}
	}
	if err := s.evaluate(now, &run, i, v, noSince); err != nil {
		return err
	}
	v.policy, v.shadow = p, p.shadow
	cost := c.Args[3]
	partial := c.Flags&FlagPartial != 0 && cost > 0
	if p.shadow && (!v.d.Allowed || partial && v.granted < cost) {
		// What the policy would have refused is allowed, in full, and
		// reported; the state keeps what enforcing would have spent.
		v.wouldDeny, v.d.Allowed, v.d.RetryAfter = true, true, 0
		if partial {
			v.granted = cost
		}
	}
	return nil
}

// countCheck counts a check of policy p in its counters.
func (p *policy) countCheck(v *verdict) {
	p.checks++
	switch {
	case v.wouldDeny:
		p.shadowDenied++
	case !v.d.Allowed:
		p.denied++
	}
}

// policyCommand applies RL.POLICY SET, DEL and GET/LIST.
func (s *Shard) policyCommand(c *Command, r *Result) {
	name := string(c.Value)
	switch c.Op {
	case OpPolicySet:
		p := definition{op: Op(c.Args[3]), params: [3]int64{c.Args[0], c.Args[1], c.Args[2]}, shadow: c.Flags&FlagShadow != 0,
			global: c.Flags&FlagGlobal != 0, relaxed: c.Flags&FlagRelaxed != 0}
		old, ok := s.policies[name]
		if ok && old.definition == p {
			r.Type = ResOK
			return
		}
		np := &policy{definition: p} // new limits: counters restart
		if ok {
			np.previous = old.previous
			if old.op != p.op {
				np.previous = old.op
			}
		}
		s.policies[name] = np
		r.Type = ResOK
	case OpPolicyDel:
		r.Type = ResInt
		if _, ok := s.policies[name]; ok {
			delete(s.policies, name)
			r.Int = 1
		}
	case OpPolicyList:
		*r = s.listPolicies(name)
	}
}

// listPolicies answers RL.POLICY LIST (name empty: every policy, each as its
// name and its definition) or RL.POLICY GET name (its definition and
// counters; nil when there is no such policy).
func (s *Shard) listPolicies(name string) Result {
	if name == "" {
		var f []Field
		for _, n := range s.policyNames() {
			f = append(f, Field{Name: n, Text: s.policies[n].String()})
		}
		return Result{Type: ResFields, Fields: f}
	}
	p, ok := s.policies[name]
	if !ok {
		return Result{Type: ResNil}
	}
	shadow := int64(0)
	if p.shadow {
		shadow = 1
	}
	return Result{Type: ResFields, Fields: []Field{
		{Name: "definition", Text: p.String()}, {Name: "shadow", Int: shadow},
		{Name: "checks", Int: p.checks}, {Name: "denied", Int: p.denied}, {Name: "shadow_denied", Int: p.shadowDenied},
	}}
}

// policyNames lists the policies' names in order.
func (s *Shard) policyNames() []string {
	names := make([]string, 0, len(s.policies))
	for n := range s.policies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// String is the definition as RL.POLICY SET takes it, after the name:
// "SLIDING 100 60000", "QUOTA 1000000 MONTH OFFSET 180", "... SHADOW". Each
// parameter is written as its row says the command takes it.
func (p definition) String() string {
	spec := p.op.Spec()
	b := []byte(spec.Word)
	for i := range spec.Params {
		param := &spec.Params[i]
		v := p.params[i]
		switch {
		case param.Keyword != "" && v == 0: // left out
		case param.Keyword != "":
			b = append(append(append(b, ' '), param.Keyword...), ' ')
			b = strconv.AppendInt(b, v/max(param.Unit, 1), 10)
		case param.Words != nil:
			b = append(append(b, ' '), param.word(v)...)
		default:
			b = strconv.AppendInt(append(b, ' '), v, 10)
		}
	}
	switch {
	case p.shadow:
		b = append(b, " SHADOW"...)
	case p.relaxed:
		b = append(b, " GLOBAL RELAXED"...)
	case p.global:
		b = append(b, " GLOBAL"...)
	}
	return string(b)
}

// flags are the definition's flags, as RL.POLICY SET gives them and a
// snapshot keeps them (one byte: shadow, global, relaxed).
func (p definition) flags() Flags {
	var f Flags
	if p.shadow {
		f |= FlagShadow
	}
	if p.global {
		f |= FlagGlobal
	}
	if p.relaxed {
		f |= FlagRelaxed
	}
	return f
}

// checkGlobal applies RL.CHECK c with p, a global policy: a GLOBAL
// decision of its algorithm on c's key, counted as RL.CHECK's.
func (s *Shard) checkGlobal(now int64, c *Command, p *policy, r *Result) {
	if c.Flags&FlagForce != 0 {
		r.Type, r.Err = ResError, ErrForceGlobal
		return
	}
	run := Command{Op: p.op, Key: c.Key, Flags: c.Flags&FlagPartial | p.flags()}
	copy(run.Args[:3], p.params[:])
	run.Args[3] = c.Args[3]
	d, granted, err := s.globalDecision(now, &run)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	s.count(c, d.Allowed)
	p.checks++
	if !d.Allowed {
		p.denied++
	}
	r.Type, r.Decision = ResDecision, d
	if c.Flags&FlagPartial != 0 {
		r.addExtra("granted", granted)
	}
	r.addExtra("shadow_denied", 0)
}
