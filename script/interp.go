package script

import (
	"slices"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// interp is one Lua state with the sandbox scripts run in: Redis's
// libraries (base, table, string, math; not os, io, debug, coroutine,
// package, nor load, loadstring, dofile, loadfile, require), every library
// table and the globals read-only, reading a global that does not exist an
// error, as in Redis 7. A state is reused from run to run, which is safe
// because a script can change nothing in it: KEYS and ARGV are new tables
// each run, and the generator and the protocol are reset.
type interp struct {
	r     *Runner
	L     *lua.LState
	meter meter
	env   *lua.LTable // the read-only view scripts see as their globals
	real  *lua.LTable // the globals behind it, where KEYS and ARGV are set

	protected map[*lua.LTable]bool // tables rawset refuses
	names     map[lua.LValue]int   // tostring's names for tables and functions, per run
	rand      lrand48
	resp3     bool // redis.setresp(3) was called
	call      *engine.ScriptCall
	args      [][]byte         // scratch for a command's arguments
	argBuf    []byte           // and for the numbers among them
	cmds      []engine.Command // and its engine commands
	results   []engine.Result
	errLine   int // the line of the latest redis.call error raised
	fns       map[*lua.FunctionProto]*lua.LFunction
	keys      *lua.LTable // the latest run's KEYS and ARGV (see stringTable)
	argv      *lua.LTable
	boxes     numberBoxes // numbers handed to the interpreter (boxes.go)
	// TIME's reply for the time timeAt (see time).
	timeAt               int64
	timeSecs, timeMicros lua.LValue
}

func init() {
	// Lua 5.0's arg table in vararg functions is not provided (nor does
	// Redis's Lua 5.1 document it): with it, gopher-lua builds one for every
	// run of every script, whose main chunk is a vararg function.
	lua.CompatVarArg = false
}

// The base functions scripts get, as gopher-lua has them.
var baseNames = []string{"assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
	"select", "setmetatable", "tonumber", "type", "unpack", "xpcall"}

// newInterp builds a state and its sandbox.
func newInterp(r *Runner) *interp {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    200, // Redis's Lua allows 200 nested C calls
		RegistrySize:     1024,
		RegistryMaxSize:  1 << 16,
		RegistryGrowStep: 256,
	})
	in := &interp{r: r, L: L, protected: make(map[*lua.LTable]bool), names: make(map[lua.LValue]int),
		fns: make(map[*lua.FunctionProto]*lua.LFunction)}
	in.meter.L = L
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable, lua.OpenString, lua.OpenMath} {
		L.Push(L.NewFunction(open))
		L.Call(0, 0)
	}
	opened := L.G.Global
	real := L.NewTable()
	for _, name := range baseNames {
		real.RawSetString(name, opened.RawGetString(name))
	}
	real.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	real.RawSetString("tostring", L.NewFunction(in.tostring))
	real.RawSetString("rawset", L.NewFunction(in.rawset))
	real.RawSetString("getmetatable", L.NewFunction(in.getmetatable))

	str := copyTable(L, opened.RawGetString("string").(*lua.LTable), "dump")
	str.RawSetString("rep", L.NewFunction(in.rep))
	str.RawSetString("format", L.NewFunction(in.format))
	for _, name := range []string{"find", "match", "gmatch", "gsub"} {
		str.RawSetString(name, L.NewFunction(in.patternCost(L, str.RawGetString(name).(*lua.LFunction).GFunction)))
	}
	str.RawSetString("gfind", str.RawGetString("gmatch"))
	for _, name := range []string{"sub", "upper", "lower", "reverse"} {
		str.RawSetString(name, L.NewFunction(in.charged(str.RawGetString(name).(*lua.LFunction).GFunction)))
	}
	tbl := copyTable(L, opened.RawGetString("table").(*lua.LTable))
	tbl.RawSetString("sort", L.NewFunction(in.sort))
	tbl.RawSetString("concat", L.NewFunction(in.concat(tbl.RawGetString("concat").(*lua.LFunction).GFunction)))
	math := copyTable(L, opened.RawGetString("math").(*lua.LTable))
	math.RawSetString("random", L.NewFunction(in.random))
	math.RawSetString("randomseed", L.NewFunction(in.randomseed))
	in.fastNumbers(real, math)

	strView := in.readOnly(str)
	real.RawSetString("string", strView)
	real.RawSetString("table", in.readOnly(tbl))
	real.RawSetString("math", in.readOnly(math))
	real.RawSetString("redis", in.readOnly(in.redisLib()))
	// Strings index the string library through a read-only metatable.
	strMeta := L.NewTable()
	strMeta.RawSetString("__index", strView)
	strMeta.RawSetString("__metatable", strView)
	L.SetMetatable(lua.LString(""), strMeta)

	// Reading a global that does not exist is an error, as in Redis.
	realMeta := L.NewTable()
	realMeta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckString(2))
		return 0
	}))
	realMeta.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(real, realMeta)
	in.real = real
	in.env = in.readOnly(real)
	real.RawSetString("_G", in.env)
	L.SetContext(&in.meter)
	return in
}

// copyTable copies t's string-keyed fields, but those named in drop, into a
// new table, in name order: gopher-lua registers a library from a Go map,
// in random order, and the order a table's keys were set in is the order
// pairs visits them.
func copyTable(L *lua.LState, t *lua.LTable, drop ...string) *lua.LTable {
	var names []string
	eachPair(t, func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); ok && !slices.Contains(drop, string(s)) {
			names = append(names, string(s))
		}
	})
	slices.Sort(names)
	out := L.NewTable()
	for _, n := range names {
		out.RawSetString(n, t.RawGetString(n))
	}
	return out
}

// readOnly returns an empty table that reads through to t and refuses
// every write, with a metatable scripts can neither read nor replace.
func (in *interp) readOnly(t *lua.LTable) *lua.LTable {
	L := in.L
	view := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", t)
	meta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	meta.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(view, meta)
	in.protected[view] = true
	in.protected[t] = true
	return view
}

// run runs proto with call's keys and arguments, and returns the reply
// appended to dst.
func (in *interp) run(proto *lua.FunctionProto, call *engine.ScriptCall, dst []resp.Value) ([]resp.Value, error) {
	L := in.L
	in.meter.reset()
	in.rand.seed(0)
	in.resp3, in.call, in.errLine = false, call, 0
	clear(in.names)
	defer func() { in.call = nil }()
	in.real.RawSetString("KEYS", in.stringTable(&in.keys, call.Keys))
	in.real.RawSetString("ARGV", in.stringTable(&in.argv, call.Args))
	fn := in.fns[proto]
	if fn == nil {
		if len(in.fns) >= maxCompiled {
			clear(in.fns)
		}
		// A chunk's closure holds no state of a run (a chunk has no
		// upvalues): one per script serves every run.
		fn = L.NewFunctionFromProto(proto)
		fn.Env = in.env
		in.fns[proto] = fn
	}
	L.SetTop(0)
	L.Push(fn)
	err := L.PCall(0, 1, nil)
	if in.meter.over != nil {
		// Over its budget, whatever the script caught on the way.
		L.SetTop(0)
		return nil, in.scriptError(in.meter.over.Error(), call)
	}
	if err != nil {
		L.SetTop(0)
		return nil, in.runError(err, call)
	}
	reply := in.appendReply(dst, L.Get(-1), in.resp3, 0)
	L.SetTop(0)
	if resp.EncodedLen(reply[len(dst):], true) > engine.MaxValue {
		return nil, in.scriptError("ERR the script's reply is longer than the most a reply may be", call)
	}
	return reply, nil
}

// stringTable is a table of ss, charged to the run: *last, the previous
// run's, refilled when that run left it as it was given (the same length,
// nothing else in it, no metatable), a new one otherwise. No run keeps a
// table past its end (a script can store nothing outside itself), so
// nothing can see the old contents change. A string equal to the one
// already in its place is kept as it is: a library sends the same limits
// and windows over and over, and a new Lua string costs two allocations.
func (in *interp) stringTable(last **lua.LTable, ss [][]byte) *lua.LTable {
	t := *last
	n := len(ss)
	if t == nil || t.Metatable != lua.LNil || t.Len() != n || extraKey(t, n) {
		t = in.L.CreateTable(n, 0)
		*last = t
	}
	for i, s := range ss {
		in.meter.charge(int64(len(s)) + slotCharge)
		if old, ok := t.RawGetInt(i + 1).(lua.LString); ok && string(old) == string(s) {
			continue
		}
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

// extraKey reports whether t holds a key other than 1 to n.
func extraKey(t *lua.LTable, n int) bool {
	var after lua.LValue = lua.LNil
	if n > 0 {
		after = lua.LNumber(n)
	}
	k, _ := t.Next(after)
	return k != lua.LNil
}
