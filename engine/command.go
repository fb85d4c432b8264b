package engine

import "errors"

// Op is what a Command asks a shard to do.
type Op uint8

// The operations. The decision ops take their algorithm's parameters in
// Args[0..2] (see the Command doc) and the cost in Args[3]. The values are
// written into Raft logs: add new ops at the end, never reorder.
const (
	opNone Op = iota

	OpSliding  // Args: limit, window_ms, -, cost
	OpFixed    // Args: limit, window_ms, -, cost
	OpLog      // Args: limit, window_ms, -, cost
	OpToken    // Args: capacity, refill_tokens, refill_ms, cost
	OpLeaky    // Args: capacity, leak_tokens, leak_ms, cost
	OpGCRA     // Args: burst, count, period_ms, cost
	OpThrottle // Args: max_burst, count, period_s, quantity

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
	OpSweep    // Args[0]: how many slots the expiry sweep examines
	OpUsage    // Int: estimated bytes Key holds, nil result if absent

	OpShape   // Args: capacity, leak_tokens, leak_ms, cost; Extra: delay_ms
	OpQuota   // Args: limit, period (Period*), offset_ms, cost
	OpAcquire // Args: limit, lease_ms; Extra: lease_id
	OpRelease // Args[0]: lease id; Int 1 if released
	OpCheck   // Value: policy; Args[3]: cost; Extra: shadow_denied
	OpAll     // Args[0]: n; the next n commands are its limits, all or none

	OpPolicySet  // Value: name; Args: params, Args[3]: kind; FlagShadow
	OpPolicyDel  // Value: name; Int 1 if it existed
	OpPolicyList // Fields: one per policy (name, then its definition)

	OpGet    // Text (bulk) or nil
	OpSet    // Value; Args[0]: expiry (see SET), Args[1]: expiry mode; Flags
	OpIncrBy // Args[0]: the increment; Int: the new value
	OpExpire // Args[0]: ms, Args[1]: 1 when absolute; Flags NX XX GT LT

	OpMemoryLimit // Args[0]: bytes (0: no limit), Args[1]: MemoryPolicy

	opLast = OpMemoryLimit // the latest op: move it when adding one
)

// Known reports whether this engine knows op: a log entry holding an op it
// does not know was written by a newer rlserver.
func (op Op) Known() bool { return op > opNone && op <= opLast }

// kinds maps the decision ops to the algorithm they use.
var kinds = map[Op]Kind{
	OpSliding: KindSliding, OpFixed: KindFixed, OpLog: KindLog, OpToken: KindToken,
	OpLeaky: KindLeaky, OpGCRA: KindGCRA, OpThrottle: KindThrottle, OpShape: KindShape,
	OpQuota: KindQuota, OpAcquire: KindLease,
}

// kind is the algorithm a decision op uses, or kindNone.
func (op Op) kind() Kind {
	if op >= OpSliding && op <= OpThrottle {
		return Kind(op-OpSliding) + KindSliding // the hot path: no map
	}
	return kinds[op]
}

// Command is one request to a shard. Key and Value alias the caller's
// memory for the duration of Apply only; the shard copies what it keeps.
type Command struct {
	Op    Op
	Flags Flags
	Key   []byte
	Value []byte // SET's value; the policy's name for RL.CHECK and RL.POLICY
	Args  [4]int64
}

// Flags are a command's options.
type Flags uint16

// The flags.
const (
	// FlagPartial grants as much of the cost as is available (PARTIAL).
	FlagPartial Flags = 1 << iota
	// FlagShadow makes a policy report what it would deny without denying.
	FlagShadow
	FlagNX      // SET, EXPIRE: only if absent (no expiry)
	FlagXX      // SET, EXPIRE: only if present (an expiry)
	FlagGT      // EXPIRE: only if later than the current expiry
	FlagLT      // EXPIRE: only if earlier than the current expiry
	FlagKeepTTL // SET: keep the key's expiry
	FlagGet     // SET: reply the old value
	flagsAll    = FlagGet<<1 - 1
)

// ResultType says which fields of a Result carry the answer.
type ResultType uint8

// The result types.
const (
	ResNone     ResultType = iota
	ResDecision            // Decision
	ResThrottle            // Throttle
	ResInt                 // Int
	ResText                // Text, a status word such as a TYPE name
	ResBulk                // Text, a bulk string
	ResOK                  // no value
	ResNil                 // null
	ResFields              // Fields
	ResScan                // Cursor and Keys
	ResError               // Err
	ResIntBulk             // Int, as a bulk string (GET of an integer)
)

// Field is one line of RL.INFO: an integer, or Text when it is not empty.
type Field struct {
	Name string
	Text string
	Int  int64
}

// Extra is one field of a decision's reply beyond the common five.
type Extra struct {
	Name  string
	Value int64
}

// Result is a shard's answer to one Command.
type Result struct {
	Type     ResultType
	Decision Decision
	// Extras are the fields a decision's reply has beyond the five common
	// ones, in this order: granted (PARTIAL), delay_ms (RL.SHAPE) or
	// lease_id (RL.ACQUIRE), shadow_denied (a shadow policy).
	// Extras[:NExtras].
	Extras  [3]Extra
	NExtras uint8
	// Members is, for RL.ALL, how many results after this one are the
	// replies of its limits; this one is the overall decision.
	Members  int
	Throttle ThrottleReply
	Int      int64
	Text     string
	Fields   []Field
	Cursor   uint64
	Keys     []string
	Err      error
}

// ErrWrongType is the answer to a decision on a key that another algorithm
// owns; the text is Redis's.
var ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

// ErrUnknownOp answers a Command whose Op this engine does not know.
var ErrUnknownOp = errors.New("ERR unknown engine operation")
