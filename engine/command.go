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
)

// kind is the algorithm a decision op uses, or kindNone.
func (op Op) kind() Kind {
	if op >= OpSliding && op <= OpThrottle {
		return Kind(op-OpSliding) + KindSliding
	}
	return kindNone
}

// Command is one request to a shard. Key aliases the caller's memory for the
// duration of Apply only; the shard copies it when it stores a new key.
type Command struct {
	Op   Op
	Key  []byte
	Args [4]int64
}

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
)

// Field is one line of RL.INFO: an integer, or Text when it is not empty.
type Field struct {
	Name string
	Text string
	Int  int64
}

// Result is a shard's answer to one Command.
type Result struct {
	Type     ResultType
	Decision Decision
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
