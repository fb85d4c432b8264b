package script

import (
	"errors"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/engine"
)

// A script that ends in an error replies it as Redis 7 does: the error,
// then where it happened, "script: <sha>, on @user_script:<line>.". An
// error the script raised itself (error("boom")) is an ERR with its
// position; one raised with a table ({err="..."}, or a redis.call that
// failed) keeps its own first word.

// chunkName is the name scripts are compiled under: errors say
// "user_script:<line>:", as Redis's do.
const chunkName = "user_script"

// scriptError is an error ending the script call, with text msg.
func (in *interp) scriptError(msg string, call *engine.ScriptCall) error {
	return &engine.Error{Code: engine.CodeScript, Msg: msg + " script: " + call.SHA + ", on @" + chunkName + ":" + strconv.Itoa(in.line()) + "."}
}

// runError words what PCall returned.
func (in *interp) runError(err error, call *engine.ScriptCall) error {
	var api *lua.ApiError
	if !errors.As(err, &api) {
		return in.scriptError("ERR "+err.Error(), call)
	}
	switch v := api.Object.(type) {
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			if in.errLine == 0 {
				in.errLine = lineOf(api.StackTrace)
			}
			return in.scriptError(string(e), call)
		}
		return in.scriptError("ERR "+in.toString(v), call)
	case lua.LString:
		in.errLine = lineOf(string(v))
		return in.scriptError("ERR "+string(v), call)
	}
	return in.scriptError("ERR "+in.toString(api.Object), call)
}

// line is the line the error happened on, 1 when it is not known.
func (in *interp) line() int { return max(in.errLine, 1) }

// lineOf finds the first "user_script:<line>:" in s.
func lineOf(s string) int {
	i := strings.Index(s, chunkName+":")
	if i < 0 {
		return 0
	}
	s = s[i+len(chunkName)+1:]
	end := strings.IndexByte(s, ':')
	if end < 0 {
		return 0
	}
	n, _ := strconv.Atoi(s[:end])
	return n
}

// currentLine is the line of the script L is executing.
func currentLine(L *lua.LState) int {
	return lineOf(L.Where(1))
}
