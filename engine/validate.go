package engine

// Check returns nil when c is a command the engine can apply, and otherwise
// the error that says why: each parameter within its bounds (ErrParam, naming
// it), the flags its op takes, and what its op checks across parameters.
// commands asks it about every command it builds; the codec asks Valid about
// every command it reads from a log or a peer, which must never reach a shard
// unchecked (a zero window would divide by zero).
func (c Command) Check() error {
	if !c.Op.Known() {
		return ErrUnknownOp
	}
	spec := c.Op.Spec()
	if c.Flags&^spec.Flags != 0 {
		return paramError("flags %#x are not %s's", uint16(c.Flags&^spec.Flags), spec.Name)
	}
	if c.Flags&FlagForce != 0 && c.Flags&(FlagPartial|FlagCountRefused) != 0 {
		return errForcePartial
	}
	if c.Flags&FlagForce != 0 && c.Flags&FlagGlobal != 0 {
		return ErrForceGlobal
	}
	for i := range spec.Params {
		if err := spec.Params[i].Check(c.Args[i]); err != nil {
			return err
		}
	}
	if spec.Cost.Name != "" {
		if err := spec.Cost.Check(c.Args[3]); err != nil {
			return err
		}
	}
	if spec.check != nil {
		return spec.check(c)
	}
	return nil
}

// Valid reports whether Check finds nothing wrong with c.
func (c Command) Valid() bool { return c.Check() == nil }

// validArgs reports whether p are parameters op may be given: those a
// record of op's kind stores, for most algorithms (see each one's valid).
func validArgs(op Op, p [3]int64) bool {
	c := Command{Op: op, Args: [4]int64{p[0], p[1], p[2]}}
	return c.Valid()
}

// validPolicyName reports whether name may name a policy: 1 to
// maxPolicyName letters, digits and "_-./", so that it reads unambiguously
// in INFO's "policy_<name>:..." lines and in RL.POLICY LIST.
func validPolicyName(name []byte) bool {
	if len(name) < 1 || len(name) > maxPolicyName {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// MaxTime is the latest instant (ms) a shard's clock may reach: 2100-01-01.
// CL.THROTTLE counts in nanoseconds, which must fit in 64 bits together with
// a bucket's depth.
const MaxTime = 4_102_444_800_000

// errForcePartial refuses FORCE beside PARTIAL, which grants only what
// fits, or beside FlagCountRefused, which FORCE already does.
var errForcePartial = paramError("FORCE charges the whole cost: it excludes PARTIAL")

// ErrForceGlobal refuses a charge that always counts on a global key: a
// region admits a strict key's cost only from blocks its home granted, and a
// debt past them would be one no region holds (docs/federation.md).
var ErrForceGlobal = &Error{CodeParam, "FORCE is not for GLOBAL keys: a region decides a global key from the budget it holds"}
