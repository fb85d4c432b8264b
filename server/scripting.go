package server

import (
	"errors"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// SCRIPT. The script cache is kept in every shard (engine/scriptcache.go),
// so SCRIPT LOAD and FLUSH go through every shard's log, like RL.POLICY SET:
// a script loaded through one node is found by EVALSHA on every node,
// whichever shard its keys are on. SCRIPT EXISTS goes through the logs too,
// so that it answers what every acknowledged LOAD and FLUSH did. Both are
// idempotent: after an error (TRYAGAIN when a shard has no leader), sending
// them again completes them.

var errNotBusy = errors.New("NOTBUSY No scripts in execution right now.")

// scriptLoad is SCRIPT LOAD script: its SHA1, once every shard holds it.
func (c *conn) scriptLoad(_ *commands.Spec, args [][]byte, out []byte) []byte {
	results, err := c.everyShard(engine.Command{Op: engine.OpScriptLoad, Value: args[2]})
	if err != nil {
		return appendError(out, err)
	}
	for i := range results {
		if results[i].Type == engine.ResError {
			return appendError(out, results[i].Err)
		}
	}
	return resp.AppendBulkString(out, results[0].Text)
}

// scriptExists is SCRIPT EXISTS sha1...: 1 where every shard holds the
// script, so that EVALSHA runs it whatever its keys, 0 elsewhere.
func (c *conn) scriptExists(_ *commands.Spec, args [][]byte, out []byte) []byte {
	names := make([][]byte, len(args)-2)
	for i, a := range args[2:] {
		if names[i], _ = commands.SHA1(a); names[i] == nil {
			names[i] = []byte("-") // no script has it: 0
		}
	}
	results, err := c.everyShard(engine.Command{Op: engine.OpScriptExists, Value: engine.Pack(names)})
	if err != nil {
		return appendError(out, err)
	}
	held := make([]bool, len(names))
	for i := range held {
		held[i] = true
	}
	for _, r := range results {
		if r.Type != engine.ResValues {
			return appendResult(out, &r, false)
		}
		for i, v := range r.Values[1:] { // an array of 1 and 0
			if i < len(held) {
				held[i] = held[i] && v.Int == 1
			}
		}
	}
	out = resp.AppendArray(out, len(held))
	for _, h := range held {
		if h {
			out = resp.AppendInt(out, 1)
		} else {
			out = resp.AppendInt(out, 0)
		}
	}
	return out
}

// errScriptFlushOption is Redis's answer to SCRIPT FLUSH with anything but
// one SYNC or ASYNC.
var errScriptFlushOption = errors.New("ERR SCRIPT FLUSH only support SYNC|ASYNC option")

// scriptFlush is SCRIPT FLUSH [ASYNC|SYNC]: every shard's cache emptied.
func (c *conn) scriptFlush(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if commands.ParseFlush(args[1:]) != nil {
		return appendError(out, errScriptFlushOption)
	}
	if _, err := c.everyShard(engine.Command{Op: engine.OpScriptFlush}); err != nil {
		return appendError(out, err)
	}
	return resp.AppendOK(out)
}

// scriptKill is SCRIPT KILL. A script is bounded by the instructions it
// may run, so none runs long enough to need killing (docs/scripting.md).
func (c *conn) scriptKill(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return appendError(out, errNotBusy)
}
