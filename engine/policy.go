package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Policies are named limits kept in the shard (RL.POLICY SET), so that
// clients say which limit applies to a key by name (RL.CHECK orders user:ada)
// and an operator changes a limit for every client at once. They are part of
// the shard's state: replicated with it, in its snapshots and its digest.
// Every shard holds every policy; the server sets and deletes them on all.

// Policy is a named limit: the decision command it runs and that command's
// parameters, as the command takes them.
type Policy struct {
	Op     Op       // OpSliding .. OpQuota, see PolicyOp
	Params [3]int64 // the command's parameters (RL.GCRA: burst)
	// Shadow makes the policy allow everything while still counting, and
	// reporting, what it would have denied: a way to try a limit on live
	// traffic before enforcing it.
	Shadow bool
}

// policy is a Policy and the counters RL.POLICY GET reports. The counters
// are statistics of this process, like INFO's, not replicated state.
type policy struct {
	Policy
	// previous is the op the policy ran before its algorithm last changed
	// (opNone if it never did): RL.CHECK restarts a key of that algorithm
	// under the new one, and refuses any other with WRONGTYPE, so that two
	// policies of different algorithms cannot reset each other's keys.
	// Replicated state: in snapshots and the digest.
	previous                     Op
	checks, denied, shadowDenied int64
}

// MaxPolicyName bounds a policy's name.
const MaxPolicyName = 200

// ErrNoPolicy answers RL.CHECK with a name no policy has.
var ErrNoPolicy = errors.New("ERR no such policy")

// PolicyOp reports whether op is a decision command a policy may run.
// CL.THROTTLE has its own reply, and leases need their id back.
func PolicyOp(op Op) bool {
	switch op {
	case OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpShape, OpQuota:
		return true
	}
	return false
}

// evaluateCheck evaluates RL.CHECK: the policy named by c.Value, applied to
// c's key with c's cost.
func (s *Shard) evaluateCheck(now int64, c *Command, i int32, v *verdict) error {
	p, ok := s.policies[string(c.Value)]
	if !ok {
		return fmt.Errorf("%w '%s'", ErrNoPolicy, c.Value)
	}
	run := Command{Op: p.Op, Flags: c.Flags & FlagPartial, Key: c.Key}
	copy(run.Args[:3], p.Params[:])
	run.Args[3] = c.Args[3]
	if i >= 0 {
		if k := s.keys.kind(i); k != p.Op.kind() {
			if p.previous == opNone || k != p.previous.kind() {
				return ErrWrongType
			}
			// The policy's algorithm changed since the key was made: the
			// key starts afresh under the new one (commit replaces it).
			i = -1
		}
	}
	if err := s.evaluate(now, &run, i, v); err != nil {
		return err
	}
	v.policy, v.shadow = p, p.Shadow
	cost := c.Args[3]
	partial := c.Flags&FlagPartial != 0 && cost > 0
	if p.Shadow && (!v.d.Allowed || partial && v.granted < cost) {
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
		p := Policy{Op: Op(c.Args[3]), Params: [3]int64{c.Args[0], c.Args[1], c.Args[2]}, Shadow: c.Flags&FlagShadow != 0}
		old, ok := s.policies[name]
		if ok && old.Policy == p {
			r.Type = ResOK
			return
		}
		np := &policy{Policy: p} // new limits: counters restart
		if ok {
			np.previous = old.previous
			if old.Op != p.Op {
				np.previous = old.Op
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
	if p.Shadow {
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

// policyWords are the algorithm names RL.POLICY SET takes, by op.
var policyWords = map[Op]string{
	OpSliding: "SLIDING", OpFixed: "FIXED", OpLog: "LOG", OpToken: "TOKEN",
	OpLeaky: "LEAKY", OpGCRA: "GCRA", OpShape: "SHAPE", OpQuota: "QUOTA",
}

// String is the policy as RL.POLICY SET takes it, after the name:
// "SLIDING 100 60000", "QUOTA 1000000 MONTH OFFSET 180", "... SHADOW".
func (p Policy) String() string {
	b := []byte(policyWords[p.Op])
	n := 3
	switch p.Op {
	case OpSliding, OpFixed, OpLog:
		n = 2
	case OpQuota:
		n = 1
	}
	for _, v := range p.Params[:n] {
		b = strconv.AppendInt(append(b, ' '), v, 10)
	}
	if p.Op == OpQuota {
		b = append(append(b, ' '), PeriodNames[Period(p.Params[1])]...)
		if p.Params[2] != 0 {
			b = strconv.AppendInt(append(b, " OFFSET "...), p.Params[2]/60_000, 10)
		}
	}
	if p.Shadow {
		b = append(b, " SHADOW"...)
	}
	return string(b)
}
