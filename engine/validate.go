package engine

// Valid reports whether c is within the bounds the engine's arithmetic relies
// on. commands checks every parameter with a message naming it before a
// command is built; Valid is the engine's own guard for commands decoded from
// a log or a peer, which must never reach a shard unchecked (a zero window
// would divide by zero).
func (c *Command) Valid() bool {
	a := c.Args
	if c.Flags&^allowedFlags(c.Op) != 0 {
		return false
	}
	if k := c.Op.kind(); k != kindNone {
		return validCost(c.Op, a[3]) && validParams(k, [3]int64{a[0], a[1], a[2]}, k == KindGCRA)
	}
	switch c.Op {
	case OpDel, OpExists, OpType, OpPTTL, OpTTL, OpInfo, OpUsage, OpDBSize, OpFlush, OpDigest, OpGet, OpIncrBy:
		return true
	case OpCheck:
		return ValidPolicyName(c.Value) && validCost(c.Op, a[3])
	case OpAll:
		return a[0] >= 1 && a[0] <= MaxAllLimits
	case OpRelease:
		return a[0] >= 1
	case OpPolicySet:
		op := Op(a[3])
		return ValidPolicyName(c.Value) && PolicyOp(op) && validParams(op.kind(), [3]int64{a[0], a[1], a[2]}, op == OpGCRA)
	case OpPolicyDel:
		return ValidPolicyName(c.Value)
	case OpPolicyList:
		return len(c.Value) == 0 || ValidPolicyName(c.Value)
	case OpSet:
		return len(c.Value) <= MaxValue && validExpiry(a[0], a[1], ExpiryAbsolute)
	case OpMemoryLimit:
		return a[0] >= 0 && a[1] >= 0 && a[1] < int64(memoryPolicies)
	case OpExpire:
		return validExpiry(a[0], a[1], ExpiryPersist) && a[1] != ExpiryNone
	case OpScan:
		return a[0] >= 0 && a[1] >= 1 && a[2] >= 0 && a[2] <= 255
	case OpSetClock, OpSweep:
		return a[0] >= 0 && (c.Op != OpSetClock || a[0] <= MaxTime)
	}
	return false
}

// allowedFlags are the flags op takes.
func allowedFlags(op Op) Flags {
	switch op {
	case OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpShape, OpQuota, OpCheck:
		return FlagPartial
	case OpPolicySet:
		return FlagShadow
	case OpSet:
		return FlagNX | FlagXX | FlagKeepTTL | FlagGet
	case OpExpire:
		return FlagNX | FlagXX | FlagGT | FlagLT
	}
	return 0
}

// validCost checks a decision's cost: a negative cost is a refund, which
// CL.THROTTLE does not take; RL.ACQUIRE takes one lease, or 0 to peek.
func validCost(op Op, cost int64) bool {
	switch op {
	case OpThrottle:
		return cost >= 0 && cost <= MaxCount
	case OpAcquire:
		return cost == 0 || cost == 1
	}
	return cost >= -MaxCount && cost <= MaxCount
}

// ValidPolicyName reports whether name may name a policy: 1 to
// MaxPolicyName letters, digits and "_-./", so that it reads unambiguously
// in INFO's "policy_<name>:..." lines and in RL.POLICY LIST.
func ValidPolicyName(name []byte) bool {
	if len(name) < 1 || len(name) > MaxPolicyName {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// validExpiry checks an expiry given as value v in mode (up to maxMode):
// relative, at most MaxDuration; absolute, within [0, MaxExpiry].
func validExpiry(v, mode, maxMode int64) bool {
	switch {
	case mode < ExpiryNone || mode > maxMode:
		return false
	case mode == ExpiryRelative:
		return v >= -MaxDuration && v <= MaxDuration
	case mode == ExpiryAbsolute:
		return v >= 0 && v <= MaxExpiry
	}
	return v == 0
}

// MaxTime is the latest instant (ms) a shard's clock may reach: 2100-01-01.
// CL.THROTTLE counts in nanoseconds, which must fit in 64 bits together with
// a bucket's depth.
const MaxTime = 4_102_444_800_000

// validParams checks a kind's parameters as stored (asCommand: GCRA's first
// parameter is the command's burst, not the stored capacity).
func validParams(k Kind, p [3]int64, asCommand bool) bool {
	count := func(v, lo int64) bool { return v >= lo && v <= MaxCount }
	duration := func(v int64) bool { return v >= 1 && v <= MaxDuration }
	switch k {
	case KindSliding, KindFixed:
		return count(p[0], 1) && duration(p[1])
	case KindLog:
		return p[0] >= 1 && p[0] <= MaxLogLimit && duration(p[1])
	case KindToken, KindLeaky, KindShape:
		return count(p[0], 1) && count(p[1], 1) && duration(p[2]) && (Bucket{p[0], p[1], p[2]}).DrainTime() <= MaxDuration
	case KindQuota:
		return count(p[0], 1) && p[1] >= int64(PeriodDay) && p[1] <= int64(PeriodYear) && p[2] >= -MaxQuotaOffset && p[2] <= MaxQuotaOffset
	case KindLease:
		return p[0] >= 1 && p[0] <= MaxLogLimit && duration(p[1]) && p[2] == 0
	case KindString:
		return p == [3]int64{}
	case KindGCRA:
		capacity := p[0]
		if asCommand {
			capacity++
		}
		return count(capacity, 1) && count(p[1], 1) && duration(p[2]) && (Bucket{capacity, p[1], p[2]}).DrainTime() <= MaxDuration
	case KindThrottle:
		t := Throttle{MaxBurst: p[0], Count: p[1], Period: p[2]}
		return p[0] >= 0 && p[0] < MaxCount && count(p[1], 1) && p[2] >= 1 && p[2] <= MaxDuration/1000 &&
			t.Emission() > 0 && t.Tolerance() <= MaxDuration*nsPerMs
	}
	return false
}
