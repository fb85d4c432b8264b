package engine

import "github.com/rlserver/rlserver/internal/resp"

// Command is one request to a shard. What Args hold is its op's: for a
// decision, its command's parameters in Args[0..2] (OpSpec.Params) and the
// cost in Args[3]. Key and Value alias the caller's memory for the duration
// of Apply only; the shard copies what it keeps.
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
	// FlagCountRefused makes a window algorithm (RL.FIXED, RL.SLIDING,
	// RL.QUOTA) count a refused cost as if it had been spent, as
	// envoyproxy/ratelimit's INCRBY counters do: a caller who keeps asking
	// stays refused until its refusals have aged out of the window too.
	FlagCountRefused
	FlagStatus   // HSET as HMSET: reply OK rather than a count
	FlagRight    // LPUSH, LPOP: at the tail (RPUSH, RPOP)
	FlagSHA      // EVAL: the script is named by its SHA1 (EVALSHA)
	FlagReadOnly // EVAL: the script may not write (EVAL_RO)
	// FlagGlobal makes a decision one of a federation's global key
	// (GLOBAL): decided from what this region holds (globaldecide.go).
	FlagGlobal
	// FlagRelaxed makes a global key relaxed rather than strict.
	FlagRelaxed
	// FlagForce makes a decision count its cost even when it does not fit
	// (FORCE): a charge for work already done, which takes the key past
	// its limit, into a debt that refuses what follows until time has paid
	// it off. The reply says whether it fitted.
	FlagForce
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
	// ResValues is a reply that is not one value (an array, a map, a
	// script's reply), in Values.
	ResValues
	// ResRecord is a reply of named integers, Fields, read by position:
	// an array of their values in RESP2, a map in RESP3 (RL.SHARE's).
	ResRecord
	// ResNilArray is a null where an array was asked for (LPOP key count
	// of a missing key): RESP2's null array, RESP3's null.
	ResNilArray
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
	// Values is a reply of several values (ResValues): HMGET's, LRANGE's,
	// HGETALL's, SCRIPT EXISTS's, a script's. A script's reply can be any
	// RESP3 value, so the engine holds such replies as resp.Values, one
	// slice a reply, which the server writes for a RESP2 or a RESP3
	// connection as Redis does, and which a script reads back as Lua
	// values. Its strings may be the keyspace's own: immutable, never
	// copied.
	Values []resp.Value
	Err    error
}

// EachKey calls fn with each key c names: Key, and for RENAME the new
// name, and for a script the keys it declares (which it alone may write).
// The write observer invalidates them; a script checks its commands' keys
// with it.
func (c *Command) EachKey(fn func(key []byte)) {
	switch c.Op {
	case OpEval:
		n := int(c.Args[1])
		j := 0
		eachPacked(c.Value, func(s []byte) {
			if j >= 1 && j <= n {
				fn(s)
			}
			j++
		})
		return
	case OpRename:
		fn(c.Key)
		fn(c.Value)
		return
	}
	if c.Key != nil {
		fn(c.Key)
	}
}

// Known reports whether this engine can apply c exactly as the release
// that wrote it: its op is known and, for a script, it was stamped with
// this release's ScriptRuntime. A replica that meets an entry it does not
// know must stop (see cluster's ErrNewerEntry), never skip it.
func (c *Command) Known() bool {
	return c.Op.Known() && (c.Op != OpEval || c.Args[0] == ScriptRuntime)
}
