package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
)

// The redis table, as Redis 7 gives it to scripts.

// The errors of redis.call and redis.pcall, in Redis's words.
var (
	errNoArgs      = errors.New("ERR Please specify at least one argument for this redis lib call")
	errArgType     = errors.New("ERR Lua redis lib command arguments must be strings or integers")
	errUnknown     = errors.New("ERR Unknown Redis command called from script")
	errNotAllowed  = errors.New("ERR This Redis command is not allowed from script")
	errWrongArgs   = errors.New("ERR Wrong number of args calling Redis command from script")
	errWriteInRO   = errors.New("ERR Write commands are not allowed from read-only scripts.")
	errRESPVersion = errors.New("RESP version must be 2 or 3.")
)

// redisLib builds the redis table.
func (in *interp) redisLib() *lua.LTable {
	L := in.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":          func(L *lua.LState) int { return in.redisCall(L, true) },
		"pcall":         func(L *lua.LState) int { return in.redisCall(L, false) },
		"error_reply":   func(L *lua.LState) int { return singleField(L, "err") },
		"status_reply":  func(L *lua.LState) int { return singleField(L, "ok") },
		"sha1hex":       in.sha1hex,
		"log":           in.log,
		"setresp":       in.setresp,
		"set_repl":      in.setRepl,
		"acl_check_cmd": in.aclCheckCmd,
		// Scripts always replicate as a whole here (see engine/script.go);
		// what Redis 7 accepts for effects replication is accepted.
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	// In name order: the order a table's keys are set is the order pairs
	// visits them, and Go's maps have none.
	for _, name := range slices.Sorted(maps.Keys(fns)) {
		t.RawSetString(name, L.NewFunction(fns[name]))
	}
	consts := map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
		"REDIS_VERSION_NUM": versionNum(in.r.cfg.RedisVersion)}
	for _, name := range slices.Sorted(maps.Keys(consts)) {
		t.RawSetString(name, lua.LNumber(consts[name]))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(in.r.cfg.RedisVersion))
	return t
}

// versionNum is Redis's REDIS_VERSION_NUM of "major.minor.patch":
// 0x00MMmmpp.
func versionNum(v string) int {
	n := 0
	for i, part := range strings.SplitN(v, ".", 3) {
		d, _ := strconv.Atoi(part)
		n |= (d & 0xff) << (16 - 8*i)
	}
	return n
}

// raiseError raises an error table, {err=text}, as Redis's library
// functions raise theirs (the script's reply then keeps its code).
func (in *interp) raiseError(L *lua.LState, text string) {
	in.errLine = currentLine(L)
	L.Error(errorTable(L, text), 0)
}

// singleField is redis.error_reply and redis.status_reply: {err=s} or
// {ok=s} for one string argument, else (as Redis) an error table saying
// so, returned rather than raised.
func singleField(L *lua.LState, field string) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "ERR wrong number or type of arguments"))
		return 1
	}
	if field == "err" {
		L.Push(errorTable(L, errorReplyText(string(s))))
		return 1
	}
	L.Push(statusTable(L, string(s)))
	return 1
}

// errorReplyText is the error redis.error_reply(s) makes, as Redis's
// luaPushErrorBuff makes it: s (with a '-' before it if it has none) is
// "-CODE message", its first word the code; without a space the whole is
// the message and the code is ERR; the message is trimmed of CR and LF.
// So "boom" is "ERR boom", "" is "ERR ", "-MY err" is "MY err".
func errorReplyText(s string) string {
	s = strings.TrimPrefix(s, "-")
	code, msg, found := strings.Cut(s, " ")
	if !found {
		code, msg = "ERR", s
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

// sha1hex is redis.sha1hex(s): the SHA1 of s (a number written as Lua
// writes it; any other value, of ""), in hex.
func (in *interp) sha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		in.raiseError(L, "ERR wrong number of arguments")
	}
	s, _ := coerceString(L.Get(1))
	h := sha1.Sum([]byte(s))
	L.Push(lua.LString(hex.EncodeToString(h[:])))
	return 1
}

// setresp is redis.setresp(2|3).
func (in *interp) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		in.raiseError(L, "ERR redis.setresp() requires one argument.")
	}
	v, _ := coerceNumber(L.Get(1))
	switch luaInt(v) {
	case 2:
		in.resp3 = false
	case 3:
		in.resp3 = true
	default:
		in.raiseError(L, "ERR "+errRESPVersion.Error())
	}
	return 0
}

// setRepl is redis.set_repl(flags): accepted (scripts replicate whole
// here), its argument checked as Redis checks it.
func (in *interp) setRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		in.raiseError(L, "ERR redis.set_repl() requires two arguments.") // sic, Redis's words
	}
	v, _ := coerceNumber(L.Get(1))
	if flags := luaInt(v); flags&^3 != 0 {
		in.raiseError(L, "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// aclCheckCmd is redis.acl_check_cmd(command, ...): true for every
// command rlserver has, since the commands a script calls are not checked
// against the user's permissions (docs/scripting.md); an unknown command
// is an error, as in Redis.
func (in *interp) aclCheckCmd(L *lua.LState) int {
	args, err := in.callArgs(L)
	if err != nil {
		in.raiseError(L, in.errorText(err))
	}
	if commands.Lookup(args[0]) == nil {
		in.raiseError(L, "ERR Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LTrue)
	return 1
}

// log is redis.log(level, message ...): to the runner's logger, at the
// level's slog equivalent. Every replica runs the script, so every replica
// logs it. The message joins the arguments that are strings or numbers,
// as Redis's does.
func (in *interp) log(L *lua.LState) int {
	if L.GetTop() < 2 {
		in.raiseError(L, "ERR redis.log() requires two arguments or more.")
	}
	f, ok := coerceNumber(L.Get(1))
	if !ok {
		in.raiseError(L, "ERR First argument must be a number (log level).")
	}
	level := luaInt(f)
	if level < 0 || level > 3 {
		in.raiseError(L, "ERR Invalid debug level.")
	}
	var msg strings.Builder
	for i := 2; i <= L.GetTop(); i++ {
		s, ok := coerceString(L.Get(i))
		if !ok {
			continue
		}
		if i > 2 {
			msg.WriteByte(' ')
		}
		msg.WriteString(s)
	}
	lvl := []slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn}[level]
	in.r.cfg.Log.Log(context.Background(), lvl, "script: "+msg.String(), "sha", in.call.SHA)
	return 0
}

// scriptable and writes say, by Spec.Index, which commands a script may
// call (those on keys, but the noscript ones: EVAL and its kin) and which
// of them write (refused in a read-only script).
var scriptable, writes = func() (may, write []bool) {
	specs := commands.Specs()
	may, write = make([]bool, len(specs)), make([]bool, len(specs))
	for _, s := range specs {
		may[s.Index] = s.Route == commands.RouteKey && !slices.Contains(s.Flags, "noscript")
		write[s.Index] = slices.Contains(s.Flags, "write")
	}
	return may, write
}()

// redisCall is redis.call (raise true: an error stops the script) and
// redis.pcall (an error is returned as {err=...}).
func (in *interp) redisCall(L *lua.LState, raise bool) int {
	v, err := in.command(L)
	if err != nil {
		t := errorTable(L, in.errorText(err))
		if raise {
			in.errLine = currentLine(L)
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	L.Push(v)
	return 1
}

// command runs the command redis.call's arguments name, and returns its
// reply as a Lua value.
func (in *interp) command(L *lua.LState) (lua.LValue, error) {
	args, err := in.callArgs(L)
	if err != nil {
		return nil, err
	}
	spec := commands.Lookup(args[0])
	if spec == nil {
		return nil, errUnknown
	}
	if spec.Route == commands.RouteServer {
		return in.serverCommand(spec, args)
	}
	if !scriptable[spec.Index] {
		return nil, errNotAllowed
	}
	if spec.CheckArity(args) != nil {
		return nil, errWrongArgs
	}
	if in.call.ReadOnly && writes[spec.Index] {
		return nil, errWriteInRO
	}
	cmds, err := spec.Parse(args, in.cmds[:0])
	in.cmds = cmds
	if err != nil {
		return nil, err
	}
	in.results = slices.Grow(in.results[:0], len(cmds))[:len(cmds)]
	if err := in.call.Apply(cmds, in.results); err != nil {
		return nil, err
	}
	return in.combine(spec, in.results)
}

// callArgs converts redis.call's arguments, strings or numbers, each
// charged to the run.
func (in *interp) callArgs(L *lua.LState) ([][]byte, error) {
	n := L.GetTop()
	if n == 0 {
		return nil, errNoArgs
	}
	args := in.args[:0]
	in.argBuf = in.argBuf[:0]
	for i := 1; i <= n; i++ {
		a, buf, ok := argString(L.Get(i), in.argBuf)
		in.argBuf = buf
		if !ok {
			return nil, errArgType
		}
		if !in.meter.charge(int64(len(a)) + slotCharge) {
			return nil, in.meter.over
		}
		args = append(args, a)
	}
	in.args = args
	return args, nil
}

// combine is the reply of a command answered by results, as the server
// gives it: a command over several keys (DEL a b) sums them, SETNX is 1
// or 0, RL.ALL is an array of the overall decision and the limits'.
func (in *interp) combine(spec *commands.Spec, results []engine.Result) (lua.LValue, error) {
	for i := range results {
		if results[i].Type == engine.ResError && (spec.ID != commands.IDAll || i == 0) && !mgetNil(spec, &results[i]) {
			return nil, results[i].Err
		}
	}
	switch {
	case spec.ID == commands.IDMGet:
		t := in.L.CreateTable(len(results), 0)
		for i := range results {
			if mgetNil(spec, &results[i]) {
				t.Append(lua.LFalse)
				continue
			}
			t.Append(in.resultValue(&results[i]))
		}
		return t, nil
	case spec.ID == commands.IDMSet:
		return statusTable(in.L, "OK"), nil
	case spec.ID == commands.IDSetNX:
		if results[0].Type == engine.ResOK {
			return in.boxes.boxInt(1), nil
		}
		return in.boxes.boxInt(0), nil
	case spec.ID == commands.IDAll:
		t := in.L.CreateTable(len(results), 0)
		for i := range results {
			t.Append(in.resultValue(&results[i]))
		}
		return t, nil
	case len(results) == 1:
		return in.resultValue(&results[0]), nil
	}
	var sum int64
	for i := range results {
		sum += results[i].Int
	}
	return in.boxes.boxInt(sum), nil
}

// mgetNil reports whether res is MGET's nil (false) for a key of another
// kind, where GET answers WRONGTYPE.
func mgetNil(spec *commands.Spec, res *engine.Result) bool {
	return spec.ID == commands.IDMGet && res.Type == engine.ResError && errors.Is(res.Err, engine.ErrWrongType)
}

// serverCommand runs the server's commands a script may call: TIME (the
// entry's time, the same on every replica), PING and ECHO.
func (in *interp) serverCommand(spec *commands.Spec, args [][]byte) (lua.LValue, error) {
	if spec.CheckArity(args) != nil {
		return nil, errWrongArgs
	}
	L := in.L
	switch spec.ID {
	case commands.IDTime:
		secs, micros := in.time()
		t := L.CreateTable(2, 0)
		t.Append(secs)
		t.Append(micros)
		return t, nil
	case commands.IDPing:
		if len(args) == 2 {
			return lua.LString(args[1]), nil
		}
		return statusTable(L, "PONG"), nil
	case commands.IDEcho:
		return lua.LString(args[1]), nil
	}
	return nil, errNotAllowed
}

// errorText is an error's reply text, its first word included.
func (in *interp) errorText(err error) string {
	return in.r.cfg.ErrorText(err)
}

// time is TIME's two strings for the run's time (the entry's, see
// engine.Shard.ApplyMicros), in seconds and microseconds: kept from the
// latest run at the same time, as they cost four allocations to make.
func (in *interp) time() (secs, micros lua.LValue) {
	now := in.call.Micros
	if in.timeAt != now || in.timeSecs == nil {
		in.timeAt = now
		in.timeSecs = lua.LString(strconv.FormatInt(now/1_000_000, 10))
		in.timeMicros = lua.LString(strconv.FormatInt(now%1_000_000, 10))
	}
	return in.timeSecs, in.timeMicros
}
