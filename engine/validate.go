package engine

// Valid reports whether c is within the bounds the engine's arithmetic relies
// on. commands checks every parameter with a message naming it before a
// command is built; Valid is the engine's own guard for commands decoded from
// a log or a peer, which must never reach a shard unchecked (a zero window
// would divide by zero).
func (c *Command) Valid() bool {
	a := c.Args
	if k := c.Op.kind(); k != kindNone {
		return a[3] >= 0 && a[3] <= MaxCount && validParams(k, [3]int64{a[0], a[1], a[2]}, k == KindGCRA)
	}
	switch c.Op {
	case OpDel, OpExists, OpType, OpPTTL, OpTTL, OpInfo, OpUsage, OpDBSize, OpFlush, OpDigest:
		return true
	case OpScan:
		return a[0] >= 0 && a[1] >= 1 && a[2] >= 0 && a[2] <= 255
	case OpSetClock, OpSweep:
		return a[0] >= 0 && (c.Op != OpSetClock || a[0] <= MaxTime)
	}
	return false
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
	case KindToken, KindLeaky:
		return count(p[0], 1) && count(p[1], 1) && duration(p[2]) && (Bucket{p[0], p[1], p[2]}).DrainTime() <= MaxDuration
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
