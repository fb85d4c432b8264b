package engine

import "math"

// Op is what a Command asks a shard to do.
type Op uint8

// The operations. Their values are written into Raft logs: add new ops at
// the end, never reorder. What each one takes and answers is its row in ops.
const (
	opNone Op = iota

	OpSliding
	OpFixed
	OpLog
	OpToken
	OpLeaky
	OpGCRA
	OpThrottle

	OpDel    // remove Key: Int 1 if it existed (DEL, RL.RESET)
	OpExists // Int 1 if Key exists
	OpType   // Text: Key's kind name, "none" if absent
	OpPTTL   // Int: ms until Key expires, -2 if absent
	OpTTL    // Int: seconds until Key expires (rounded), -2 if absent
	OpInfo   // Fields describing Key, nil result if absent

	OpDBSize   // Int: keys held
	OpScan     // Args: cursor, count, kind filter (0: any); Keys and Cursor
	OpFlush    // remove every key
	OpDigest   // Text: hex SHA-256 of the live state
	OpSetClock // Args[0]: the shard's time from now on, even if earlier
	OpSweep    // Args[0]: how many records the expiry sweep examines
	OpUsage    // Int: estimated bytes Key holds, nil result if absent

	OpShape   // Extra: delay_ms
	OpQuota   // Args[1] is a Period, Args[2] the offset in ms
	OpAcquire // Args[3]: 1 takes a lease, 0 peeks; Extra: lease_id
	OpRelease // Args[0]: lease id; Int 1 if released
	OpCheck   // Value: policy; Args[3]: cost; Extra: shadow_denied
	OpAll     // Args[0]: n; the next n commands are its limits, all or none

	OpPolicySet  // Value: name; Args[0..2]: its op's parameters, Args[3]: its op; FlagShadow
	OpPolicyDel  // Value: name; Int 1 if it existed
	OpPolicyList // Fields: one per policy (name, then its definition)

	OpGet    // Text (bulk) or nil
	OpSet    // Value; Args[0]: expiry (see SET), Args[1]: expiry mode; Flags
	OpIncrBy // Args[0]: the increment; Int: the new value
	OpExpire // Args[0]: ms, Args[1]: 1 when absolute; Flags NX XX GT LT

	OpMemoryLimit // Args[0]: bytes (0: no limit), Args[1]: MemoryPolicy

	// Hashes (hash.go): the field in Value, or fields and values packed.
	OpHGet         // Value: field; Text (bulk) or nil
	OpHSet         // Value packs field, value ...; Int: fields added (FlagStatus: OK)
	OpHMGet        // Value packs fields; Values: an array
	OpHIncrBy      // Value: field, Args[0]: increment; Int
	OpHIncrByFloat // Value packs field and increment; Text (bulk)
	OpHDel         // Value packs fields; Int: fields removed
	OpHExists      // Value: field; Int
	OpHGetAll      // Values: a map
	OpHLen         // Int

	// Lists (list.go); FlagRight for the tail's end.
	OpPush   // Value packs elements; Int: the new length
	OpPop    // Args[0]: count, Args[1]: 1 when a count was given
	OpLIndex // Args[0]: index
	OpLRange // Args[0], Args[1]: start and stop; Values: an array
	OpLTrim  // Args[0], Args[1]: start and stop
	OpLLen   // Int

	OpRename // Value: the new name; FlagNX (RENAMENX): Int 1 or 0

	// Scripts (script.go, scriptcache.go).
	OpEval         // Value packs script, keys, args; Args[0]: runtime, Args[1]: keys; FlagSHA, FlagReadOnly
	OpScriptLoad   // Value: body; Text: its SHA1
	OpScriptExists // Value packs SHA1s; Values: an array of 1 and 0
	OpScriptFlush  // forget every script

	OpTop // Args[0]: 1 denied, 0 allowed; Args[1]: count; Fields: the heaviest keys (topkeys.go)

	// Budget leases (share.go).
	OpShare   // Args: limit, window, TTL, demand; Value: holder packed, BURST, ACK; ResRecord
	OpUnshare // Value: holder; Int 1 if it held a share

	// Global keys, the federation layer's (global*.go).
	OpGlobalScan    // Args: cursor, count; Text: GlobalScan; read-only (Inspect)
	OpGlobalLease   // Args: params; Value: GlobalLeaseRequest; Text: GlobalGrant
	OpGlobalInstall // Args: params; Value: GlobalInstall; Int 1 if recorded
	OpGlobalCounts  // Args: params; Value: GlobalCounts

	// Reservations (reserve.go): a decision charged at an estimate, and
	// its settlement at the actual cost.
	OpReserve // Args: the algorithm's parameters, the estimate; Value: its op, the TTL; Extra: reservation
	OpSettle  // Args[0]: the reservation's seq, Args[1]: the actual cost; a Decision

	// WATCH (watch.go): Args[0] WatchRead answers Key's fingerprint;
	// WatchGuard compares it with Value and skips the Args[1] commands after
	// it when they differ.
	OpWatch

	opCount // one past the latest op
)

// OpSpec is what the engine says of an operation: what its command is
// called, which parameters it takes and within which bounds, and which
// flags. The layers above read it rather than keep their own copy: commands
// parses parameters in this order and asks Param.Check about each, metrics
// name decisions by Name, and the codec checks a command read from a log
// with Command.Valid, which reads the same row.
//
// A decision's algorithm is its file (sliding.go, bucket.go, ...) and its
// row here: the row names the Kind of key it keeps and the algorithm that
// decides, and the engine dispatches through it.
type OpSpec struct {
	// Name is the command that asks for a decision, in lower case, as
	// Redis's INFO commandstats names commands ("rl.sliding"); "" for the
	// ops that are not decisions, which several commands share.
	Name string
	// Word is the algorithm's name in RL.POLICY SET and RL.ALL ("SLIDING");
	// "" when a policy cannot run the op.
	Word string
	// Params are what Args[0], Args[1] and Args[2] hold, in the order the
	// command takes them. Args past them are not read.
	Params []Param
	// Cost bounds Args[3]: the cost of a decision (negative: a refund), or
	// CL.THROTTLE's quantity. Its Name is "" for ops without a cost.
	Cost Param
	// Flags are the flags the op takes.
	Flags Flags

	// kind is the kind of key the op's algorithm keeps (kindNone when the
	// op is no algorithm's); typeName, TYPE's name for such keys when it is
	// not Name.
	kind     Kind
	typeName string
	// algo decides the op (nil for ops that are not an algorithm's).
	algo algorithm
	// check verifies what the bounds of each parameter cannot: bounds
	// across parameters, and what is not a number (a policy's name).
	check func(c Command) error
	// extra names the field a decision's reply has beyond the common five
	// for the algorithm's verdict.extra ("" for none): RL.SHAPE's delay_ms,
	// RL.ACQUIRE's lease_id.
	extra string
	// cellReply: the op answers with redis-cell's reply (verdict.throttle,
	// ResThrottle) rather than the common Decision.
	cellReply bool
	// scripted: a script may ask for the op. The ops on one key (RENAME: on
	// two) are, not those of the whole shard, nor a script.
	scripted bool
}

// ops describes every op, by value. An op without a row is unknown: an
// entry that holds one was written by a newer rlserver.
var ops = [opCount]OpSpec{
	OpSliding: {Name: "rl.sliding", Word: "SLIDING", Params: []Param{pLimit, pWindow}, Cost: pCost,
		Flags: FlagPartial | FlagCountRefused | FlagGlobal | FlagRelaxed | FlagForce, kind: KindSliding, algo: slidingAlgorithm{}, check: checkCountRefused, scripted: true},
	OpFixed: {Name: "rl.fixed", Word: "FIXED", Params: []Param{pLimit, pWindow}, Cost: pCost,
		Flags: FlagPartial | FlagCountRefused | FlagGlobal | FlagRelaxed | FlagForce, kind: KindFixed, algo: fixedAlgorithm{}, check: checkCountRefused, scripted: true},
	OpLog: {Name: "rl.log", Word: "LOG", Params: []Param{{Name: "limit", Min: 1, Max: MaxLogLimit, Role: RoleUnits}, pWindow}, Cost: pCost,
		Flags: FlagPartial | FlagForce, kind: KindLog, algo: logAlgorithm{}, scripted: true},
	OpToken: {Name: "rl.token", Word: "TOKEN", Params: tokenParams, Cost: pCost,
		Flags: FlagPartial | FlagGlobal | FlagForce, kind: KindToken, algo: bucketFor(OpToken, tokenParams, tokensLeft),
		check: drainCheck(tokenParams, "capacity * refill_ms / refill_tokens"), scripted: true},
	OpLeaky: {Name: "rl.leaky", Word: "LEAKY", Params: leakyParams, Cost: pCost,
		Flags: FlagPartial | FlagGlobal | FlagForce, kind: KindLeaky, algo: bucketFor(OpLeaky, leakyParams, levelHeld),
		check: drainCheck(leakyParams, "capacity * leak_ms / leak_tokens"), scripted: true},
	OpGCRA: {Name: "rl.gcra", Word: "GCRA", Params: gcraParams, Cost: pCost,
		Flags: FlagPartial | FlagGlobal | FlagForce, kind: KindGCRA, algo: bucketFor(OpGCRA, gcraParams, arrivalTime),
		check: drainCheck(gcraParams, "(burst + 1) * period_ms / count"), scripted: true},
	OpShape: {Name: "rl.shape", Word: "SHAPE", Params: leakyParams, Cost: pCost,
		Flags: FlagPartial | FlagForce, kind: KindShape, algo: bucketFor(OpShape, leakyParams, queueAhead), extra: "delay_ms",
		check: drainCheck(leakyParams, "capacity * leak_ms / leak_tokens"), scripted: true},
	OpQuota: {Name: "rl.quota", Word: "QUOTA", Params: quotaParams, Cost: pCost,
		Flags: FlagPartial | FlagCountRefused | FlagForce, kind: KindQuota, algo: quotaAlgorithm{}, check: checkCountRefused, scripted: true},
	OpThrottle: {Name: "cl.throttle", Params: throttleParams, Cost: Param{Name: "quantity", Max: MaxCount},
		kind: KindThrottle, algo: throttleAlgorithm{}, check: checkThrottle, cellReply: true, scripted: true},
	OpAcquire: {Name: "rl.acquire", Params: leaseParams, Cost: Param{Name: "cost", Max: 1},
		kind: KindLease, typeName: "rl.lease", algo: leaseAlgorithm{}, extra: "lease_id", scripted: true},
	OpCheck: {Name: "rl.check", Cost: pCost, Flags: FlagPartial | FlagForce, check: checkPolicyName, scripted: true},
	OpAll:   {Name: "rl.all", Params: []Param{{Name: "limits", Min: 1, Max: MaxAllLimits}}, Cost: pCost, scripted: true},

	// The ops that are not decisions take no parameters, or bounds that
	// only keep a command read from a log from misleading a shard.
	OpRelease:    {Params: []Param{{Name: "lease_id", Min: 1, Max: math.MaxInt64}}, scripted: true},
	OpDel:        {scripted: true},
	OpExists:     {scripted: true},
	OpType:       {scripted: true},
	OpPTTL:       {scripted: true},
	OpTTL:        {scripted: true},
	OpInfo:       {scripted: true},
	OpUsage:      {scripted: true},
	OpDBSize:     {},
	OpFlush:      {},
	OpDigest:     {},
	OpScan:       {Params: []Param{{Name: "cursor", Max: math.MaxInt64}, {Name: "count", Min: 1, Max: math.MaxInt64}, {Name: "type", Max: math.MaxUint8}}},
	OpSetClock:   {Params: []Param{{Name: "time", Max: MaxTime}}},
	OpSweep:      {Params: []Param{{Name: "count", Max: math.MaxInt64}}},
	OpPolicySet:  {Flags: FlagShadow | FlagGlobal | FlagRelaxed}, // check: set in init, as it reads this table
	OpPolicyDel:  {check: checkPolicyName},
	OpPolicyList: {check: checkPolicyListName},
	OpGet:        {scripted: true},
	OpSet:        {Flags: FlagNX | FlagXX | FlagKeepTTL | FlagGet, check: checkSet, scripted: true},
	OpIncrBy:     {scripted: true},
	OpExpire:     {Flags: FlagNX | FlagXX | FlagGT | FlagLT, check: checkExpire, scripted: true},
	OpMemoryLimit: {Params: []Param{{Name: "bytes", Max: math.MaxInt64},
		{Name: "policy", Max: int64(memoryPolicies) - 1}}},

	OpHGet:         {scripted: true},
	OpHSet:         {Flags: FlagStatus, check: packedCheck(2, 2), scripted: true},
	OpHMGet:        {check: packedCheck(1, 1), scripted: true},
	OpHIncrBy:      {scripted: true},
	OpHIncrByFloat: {check: packedCheck(2, 0), scripted: true},
	OpHDel:         {check: packedCheck(1, 1), scripted: true},
	OpHExists:      {scripted: true},
	OpHGetAll:      {scripted: true},
	OpHLen:         {scripted: true},
	OpPush:         {Flags: FlagRight, check: packedCheck(1, 1), scripted: true},
	OpPop:          {Flags: FlagRight, Params: []Param{{Name: "count", Max: math.MaxInt64}, {Name: "counted", Max: 1}}, scripted: true},
	OpLIndex:       {scripted: true},
	OpLRange:       {scripted: true},
	OpLTrim:        {scripted: true},
	OpLLen:         {scripted: true},
	OpRename:       {Flags: FlagNX, scripted: true},
	OpEval: {Flags: FlagSHA | FlagReadOnly, Params: []Param{{Name: "runtime", Min: ScriptRuntime, Max: ScriptRuntime},
		{Name: "numkeys", Max: math.MaxInt32}}, check: checkEval},
	OpScriptLoad:   {},
	OpScriptExists: {check: packedCheck(1, 1)},
	OpScriptFlush:  {},
	OpTop:          {Params: []Param{{Name: "outcome", Max: 1}, {Name: "count", Min: 1, Max: MaxTopCount}}},
	OpShare:        {Params: shareParams, check: checkShare, scripted: true},
	OpUnshare:      {check: checkUnshare, scripted: true},

	OpGlobalScan:    {Params: []Param{{Name: "cursor", Max: math.MaxInt32}, {Name: "count", Min: 1, Max: MaxGlobalScan}}},
	OpGlobalLease:   {}, // checks: set in init, as they read this table
	OpGlobalInstall: {},
	OpGlobalCounts:  {},
	OpReserve:       {Cost: Param{Name: "cost", Min: 1, Max: MaxCount}}, // check: set in init, as it reads this table
	OpSettle:        {Params: []Param{{Name: "reservation", Min: 1, Max: math.MaxInt64}, {Name: "actual", Max: MaxCount}}},
	OpWatch: {Params: []Param{{Name: "mode", Max: WatchGuard}, {Name: "guarded", Max: math.MaxInt32}},
		check: checkWatch},
}

func init() {
	ops[OpPolicySet].check = checkPolicySet
	ops[OpGlobalLease].check = checkGlobalLease
	ops[OpGlobalInstall].check = checkGlobalInstall
	ops[OpGlobalCounts].check = checkGlobalCounts
	ops[OpReserve].check = checkReserve
}

// checkCountRefused refuses FlagCountRefused beside FlagPartial: a partial
// grant takes what is available, so it has no refused cost to count.
func checkCountRefused(c Command) error {
	if c.Flags&FlagCountRefused != 0 && c.Flags&FlagPartial != 0 {
		return paramError("counting refused costs excludes PARTIAL")
	}
	return checkGlobalFlags(c)
}

// checkGlobalFlags refuses RELAXED without GLOBAL, and GLOBAL beside
// counting refused costs, which a global key does not do.
func checkGlobalFlags(c Command) error {
	switch {
	case c.Flags&FlagRelaxed != 0 && c.Flags&FlagGlobal == 0:
		return paramError("RELAXED needs GLOBAL")
	case c.Flags&FlagGlobal != 0 && c.Flags&FlagCountRefused != 0:
		return paramError("GLOBAL excludes counting refused costs")
	}
	return nil
}

// Spec describes op. An unknown op's spec is empty.
func (op Op) Spec() *OpSpec {
	if op >= opCount {
		return &ops[opNone]
	}
	return &ops[op]
}

// Known reports whether this engine knows op: a log entry holding an op it
// does not know was written by a newer rlserver.
func (op Op) Known() bool { return op > opNone && op < opCount }

// kind is the algorithm a decision op uses, or kindNone (RL.CHECK's is its
// policy's).
func (op Op) kind() Kind { return op.Spec().kind }

// decides reports whether op is a decision: counted allowed or denied.
func (op Op) decides() bool { return op.Spec().algo != nil || op == OpCheck }

// fromScript reports whether a script may call op, as its row says.
func (op Op) fromScript() bool { return op.Spec().scripted }

// Ops calls fn for every op a command asks for, in op order.
func Ops(fn func(op Op, spec *OpSpec)) {
	for op := opNone + 1; op < opCount; op++ {
		fn(op, &ops[op])
	}
}
