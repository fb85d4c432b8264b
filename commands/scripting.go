package commands

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/engine"
)

// EVAL, EVALSHA, their read-only forms and SCRIPT. A script runs on the
// shard of its keys, which must share a hash slot, even on a standalone
// server (one shard runs it, as one step): see engine/script.go.

var (
	errNegativeKeys = errors.New("ERR Number of keys can't be negative")
	errTooManyKeys  = errors.New("ERR Number of keys can't be greater than number of args")
	// ErrNoScript is EVALSHA's error for a script that is not cached.
	ErrNoScript   = errors.New("NOSCRIPT No matching script. Please use EVAL.")
	errScriptLong = fmt.Errorf("ERR the script, its keys and arguments are longer than the %d bytes a command may carry", engine.MaxValue)
)

// evalKeys calls fn with the keys of "EVAL script numkeys key ... arg ...",
// as far as numkeys is valid.
func evalKeys(args [][]byte, fn func(key []byte)) {
	if len(args) < 3 {
		return
	}
	n, ok := ParseInt(args[2])
	if !ok || n < 0 || n > int64(len(args)-3) {
		return
	}
	for _, k := range args[3 : 3+n] {
		fn(k)
	}
}

// evalParser parses EVAL (sha false) and EVALSHA, read-only or not.
func evalParser(sha, readOnly bool) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		n, ok := ParseInt(args[2])
		switch {
		case !ok:
			return dst, ErrNotInteger
		case n < 0:
			return dst, errNegativeKeys
		case n > int64(len(args)-3):
			return dst, errTooManyKeys
		}
		c := engine.Command{Op: engine.OpEval, Args: [4]int64{engine.ScriptRuntime, n}}
		if readOnly {
			c.Flags |= engine.FlagReadOnly
		}
		// The packing holds the script and everything after numkeys.
		size := len(args[1]) + 10
		for _, a := range args[3:] {
			size += len(a) + 5
		}
		c.Value = make([]byte, 0, size)
		if sha {
			c.Flags |= engine.FlagSHA
			var ok bool
			if c.Value, ok = appendSHA1(c.Value, args[1]); !ok {
				return dst, ErrNoScript
			}
		} else {
			c.Value = engine.AppendPacked(c.Value, args[1])
		}
		for _, a := range args[3:] {
			c.Value = engine.AppendPacked(c.Value, a)
		}
		if len(c.Value) > engine.MaxValue {
			return dst, errScriptLong
		}
		if n > 0 {
			c.Key = args[3]
		}
		return append(dst, c), nil
	}
}

// SHA1 returns a script's name as given (any case) in lower case, false if
// it is not 40 hex digits.
func SHA1(s []byte) ([]byte, bool) {
	out, ok := appendSHA1(make([]byte, 0, 41), s)
	if !ok {
		return nil, false
	}
	return out[1:], true
}

// appendSHA1 appends s, a script's name, packed and in lower case, false
// if it is not 40 hex digits.
func appendSHA1(b, s []byte) ([]byte, bool) {
	if len(s) != 40 {
		return b, false
	}
	b = append(b, 40)
	for _, c := range s {
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			c += 'a' - 'A'
		default:
			return b, false
		}
		b = append(b, c)
	}
	return b, true
}

// evalSpec builds the spec of EVAL, EVALSHA, EVAL_RO or EVALSHA_RO.
func evalSpec(id ID, name string, sha, readOnly bool, summary string) *Spec {
	flags := []string{"noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys", "movablekeys"}
	if readOnly {
		flags = []string{"readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"}
	}
	script := Arg{Name: "script", Type: "string"}
	if sha {
		script = Arg{Name: "sha1", Type: "string"}
	}
	return &Spec{
		ID: id, Name: name, Arity: -3, Flags: flags, FirstKey: 3, LastKey: 3, KeyStep: 1,
		Categories: []string{"@slow", "@scripting"}, Group: "scripting", Since: "1.3.0",
		Complexity: "Depends on the script that is executed.", Summary: summary,
		Args: []Arg{script, {Name: "numkeys", Type: "integer"}, {Name: "key", Type: "key", Optional: true, Multiple: true},
			{Name: "arg", Type: "string", Optional: true, Multiple: true}},
		Route: RouteKey, SameSlot: true, parse: evalParser(sha, readOnly),
	}
}

var scriptCats = []string{"@slow", "@scripting"}

// scriptingSpecs are EVAL and its kin, and SCRIPT.
var scriptingSpecs = []*Spec{
	evalSpec(IDEval, "eval", false, false, "Runs a Lua script on the shard of its keys, as one atomic step, replicated by replaying it."),
	evalSpec(IDEvalSHA, "evalsha", true, false, "Runs a cached Lua script, named by its SHA1: NOSCRIPT if it is not cached."),
	evalSpec(IDEvalRO, "eval_ro", false, true, "Runs a Lua script that may only read."),
	evalSpec(IDEvalSHARO, "evalsha_ro", true, true, "Runs a cached Lua script that may only read."),
	{
		ID: IDScript, Name: "script", Arity: -2, Categories: scriptCats, Group: "scripting", Since: "1.3.0",
		Complexity: "Depends on the subcommand.", Summary: "The script cache, kept in every shard.", Route: RouteServer,
		Sub: []*Spec{
			sub("script", "load", 3, []string{"noscript", "stale"}, scriptCats,
				"Caches a script in every shard, so that EVALSHA runs it on any node. Replies its SHA1.", Arg{Name: "script", Type: "string"}),
			sub("script", "exists", -3, []string{"noscript"}, scriptCats,
				"For each SHA1, 1 if every shard holds the script (EVALSHA runs it whatever the keys), 0 if not.",
				Arg{Name: "sha1", Type: "string", Multiple: true}),
			sub("script", "flush", -2, []string{"noscript"}, scriptCats, "Empties the script cache of every shard.",
				Arg{Name: "flush-type", Type: "oneof", Optional: true, Args: []Arg{{Name: "async", Type: "pure-token", Token: "ASYNC"}, {Name: "sync", Type: "pure-token", Token: "SYNC"}}}),
			sub("script", "kill", 2, []string{"noscript", "allow_busy"}, scriptCats,
				"Replies NOTBUSY: a script is bounded by its instructions, never killed."),
			sub("script", "help", 2, []string{"loading", "stale"}, scriptCats, "Lists the SCRIPT subcommands."),
		},
	},
}
