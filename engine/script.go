package engine

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"

	"github.com/rlserver/rlserver/internal/resp"
)

// Scripts (EVAL, EVALSHA and their _RO forms) are replayed, not their
// effects replicated: the entry that carries a script carries its body, or
// the SHA1 of one in the shard's script cache (replicated state, see
// scriptcache.go), its keys and arguments, and every replica runs it in
// its state machine at the entry's time, as it applies every other
// command. A leader cannot replicate a script's effects, because it does
// not know the state the entry will meet: entries still in flight come
// before it. So the run must be a function of the state, the entry and its
// time, on every replica and every release: package script's interpreter
// counts its instructions rather than timing them, seeds math.random alike
// on every run, and iterates tables in insertion order; and each entry is
// stamped with the ScriptRuntime that ran it, so that a replica whose
// runtime would behave differently halts (see Command.Known) instead of
// diverging.
//
// The engine stays free of the interpreter: it calls a ScriptRunner, which
// cmd/rlserver wires in, and the runner applies the script's commands
// through a ScriptCall, to this shard, inside the same Apply: a script is
// one atomic step, with the decisions of the same batch before and after
// it.

// ScriptRuntime is the version of the script semantics that this release's
// runner implements (package script on gopher-lua). Change it whenever a
// script could give another reply or leave another state than before:
// replicas of the older release then refuse the newer entries rather than
// replay them differently. Runtime 2: the libraries convert numeric
// strings, write numbers and match patterns as Lua 5.1 does, pcall hands
// back an error table's message, and the redis table checks its arguments,
// as Redis 7's.
const ScriptRuntime = 2

// ScriptRunner runs Lua scripts for the shards. It is called on a shard's
// own goroutine, inside Apply, and must be deterministic: the same script,
// keys, arguments, time and shard state give the same reply and the same
// commands on every replica.
type ScriptRunner interface {
	// Compile returns nil when body compiles, and the error to reply
	// otherwise: an EVAL or SCRIPT LOAD of such a script is refused, and
	// nothing is cached.
	Compile(body []byte) error
	// Run runs call's script, applying the commands it calls with
	// call.Apply, and returns its reply (see Result.Values) appended to
	// dst (the shard's scratch, which it copies at once), or the error it
	// ended with (an *Error of CodeScript, whose message is the whole
	// reply).
	Run(call *ScriptCall, dst []resp.Value) (reply []resp.Value, err error)
}

// ScriptCall is one run of a script on a shard.
type ScriptCall struct {
	SHA        string // the body's SHA1, in lower-case hex
	Body       []byte
	Keys, Args [][]byte
	Now        int64 // the entry's time, Unix ms: the time of the commands the script calls
	Micros     int64 // the script's time, Unix µs: TIME inside the script (Shard.ApplyMicros)
	ReadOnly   bool  // EVAL_RO and EVALSHA_RO: no command may write

	shard *Shard
}

// Apply applies cmds, what one command the script called parses into, at
// the script's time, writing one result per command into out. A command on
// a key the script did not declare in its KEYS is refused (ErrUndeclaredKey),
// and so is any command that is not on keys (ErrNotFromScript): a script
// touches its own shard's keys, the ones the server routed it by.
func (sc *ScriptCall) Apply(cmds []Command, out []Result) error {
	for i := range cmds {
		c := &cmds[i]
		if !c.Op.fromScript() {
			return ErrNotFromScript
		}
		var err error
		c.EachKey(func(k []byte) {
			if err == nil && !sc.declared(k) {
				err = &Error{CodeScript, "ERR Script attempted to access a key not declared in KEYS: '" + string(k) + "'"}
			}
		})
		if err != nil {
			return err
		}
	}
	sc.shard.applyCommands(sc.Now, cmds, out, false)
	return nil
}

// declared reports whether key is one of the script's KEYS.
func (sc *ScriptCall) declared(key []byte) bool {
	for _, k := range sc.Keys {
		if string(k) == string(key) {
			return true
		}
	}
	return false
}

// The errors of scripting.
var (
	// ErrNoScript is EVALSHA's answer for a SHA1 the cache does not hold.
	ErrNoScript = &Error{CodeNoScript, "No matching script. Please use EVAL."}
	// ErrNotFromScript refuses a command a script may not call.
	ErrNotFromScript = &Error{CodeScript, "ERR This Redis command is not allowed from script"}
	// ErrNoRunner answers a script on a shard that was given no runner.
	ErrNoRunner = &Error{CodeScript, "ERR scripting is not enabled on this server"}
	// ErrScriptCacheFull refuses a SCRIPT LOAD past maxScripts.
	ErrScriptCacheFull = &Error{CodeParam, "the script cache holds at most 10000 scripts: SCRIPT FLUSH first"}
)

// SetScripts gives the shard the runner of its scripts (nil: none, and
// scripts are refused).
func (s *Shard) SetScripts(r ScriptRunner) { s.runner = r }

// SHA1Hex is the cache's name for a script: its SHA1 in lower-case hex.
func SHA1Hex(body []byte) string {
	h := sha1.Sum(body)
	return hex.EncodeToString(h[:])
}

// eval applies OpEval: Value packs the script (its body, or with FlagSHA its
// SHA1), then its keys and arguments; Args[1] counts the keys, Args[0] is
// the runtime that must run it.
func (s *Shard) eval(now int64, c *Command, r *Result) {
	parts := unpack(s.parts[:0], c.Value)
	s.parts = parts[:0]
	nkeys := int(c.Args[1])
	// The shard's own call, reused: the runner keeps no call past Run.
	call := &s.call
	*call = ScriptCall{Keys: parts[1 : 1+nkeys], Args: parts[1+nkeys:], Now: now, Micros: s.scriptMicros(now),
		ReadOnly: c.Flags&FlagReadOnly != 0, shard: s}
	defer func() { *call = ScriptCall{} }()
	if s.runner == nil {
		r.Type, r.Err = ResError, ErrNoRunner
		return
	}
	if c.Flags&FlagSHA != 0 {
		call.SHA = string(parts[0])
		body, ok := s.scripts.use(call.SHA)
		if !ok {
			r.Type, r.Err = ResError, ErrNoScript
			return
		}
		call.Body = body
	} else {
		call.Body, call.SHA = parts[0], SHA1Hex(parts[0])
		if _, ok := s.scripts.use(call.SHA); !ok {
			if err := s.runner.Compile(call.Body); err != nil {
				r.Type, r.Err = ResError, err
				return
			}
			s.cacheScript(call.SHA, call.Body, false)
		}
	}
	s.stat.ScriptRuns++
	reply, err := s.runner.Run(call, s.scriptReply[:0])
	if err == nil {
		r.Type, r.Values = ResValues, slices.Clone(reply)
	}
	clear(reply) // the scratch holds none of the script's strings
	if cap(reply) <= maxKeptReply {
		s.scriptReply = reply[:0]
	}
	if err != nil {
		s.stat.ScriptErrors++
		r.Type, r.Err = ResError, err
	}
}

// maxKeptReply is the most values the shard keeps room for between
// scripts: a rare large reply is not held for the life of the shard.
const maxKeptReply = 4 << 10

// scriptCommand applies SCRIPT LOAD (Value: the body; Text: its SHA1),
// SCRIPT EXISTS (Value packs SHA1s; Values: an array of 1 and 0) and
// SCRIPT FLUSH.
func (s *Shard) scriptCommand(now int64, c *Command, r *Result) {
	switch c.Op {
	case OpScriptLoad:
		if s.runner == nil {
			r.Type, r.Err = ResError, ErrNoRunner
			return
		}
		sha := SHA1Hex(c.Value)
		if _, ok := s.scripts.byName[sha]; !ok {
			if err := s.runner.Compile(c.Value); err != nil {
				r.Type, r.Err = ResError, err
				return
			}
		}
		if err := s.cacheScript(sha, c.Value, true); err != nil {
			r.Type, r.Err = ResError, err
			return
		}
		r.Type, r.Text = ResBulk, sha
	case OpScriptExists:
		n := packedCount(c.Value)
		vs := append(make([]resp.Value, 0, 1+n), resp.Array(n))
		eachPacked(c.Value, func(sha []byte) {
			held := int64(0)
			if _, ok := s.scripts.byName[string(sha)]; ok {
				held = 1
			}
			vs = append(vs, resp.Int(held))
		})
		r.Type, r.Values = ResValues, vs
	case OpScriptFlush:
		s.scripts = newScriptCache()
		r.Type = ResOK
	}
}

// checkEval checks OpEval: Value packs the script and at least Args[1]
// keys, and a script named by its SHA1 is named in lower-case hex.
func checkEval(c Command) error {
	n := packedCount(c.Value)
	if n < 1+int(c.Args[1]) {
		return paramError("a script with %d keys and %d values", c.Args[1], n)
	}
	if c.Flags&FlagSHA != 0 {
		var sha []byte
		eachPacked(c.Value, func(s []byte) {
			if sha == nil {
				sha = s
			}
		})
		if !isSHA1Hex(sha) {
			return paramError("not a SHA1")
		}
	}
	return nil
}

// isSHA1Hex reports whether s is a SHA1 in lower-case hex.
func isSHA1Hex(s []byte) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
