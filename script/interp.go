package script

import (
	"maps"
	"math"
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

	protected  map[*lua.LTable]bool        // tables rawset and setmetatable refuse
	viewOf     map[*lua.LTable]*lua.LTable // a read-only view's contents (readOnly)
	presented  map[*lua.LTable]lua.LValue  // what getmetatable answers for a view
	nextFn     *lua.LFunction              // next, which pairs returns
	ipairsIter *lua.LFunction              // ipairs' iterator
	names      map[lua.LValue]int          // tostring's names for tables and functions, per run
	rand       lrand48
	resp3      bool // redis.setresp(3) was called
	call       *engine.ScriptCall
	args       [][]byte         // scratch for a command's arguments
	argBuf     []byte           // and for the numbers among them
	cmds       []engine.Command // and its engine commands
	results    []engine.Result
	errLine    int // the line of the latest redis.call error raised
	fns        map[*lua.FunctionProto]*lua.LFunction
	keys       *lua.LTable // the latest run's KEYS and ARGV (see stringTable)
	argv       *lua.LTable
	boxes      numberBoxes // numbers handed to the interpreter (boxes.go)
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
		fns: make(map[*lua.FunctionProto]*lua.LFunction), viewOf: make(map[*lua.LTable]*lua.LTable),
		presented: make(map[*lua.LTable]lua.LValue)}
	in.meter.L = L
	// gopher-lua's base library, for the two functions wrapped from it.
	L.Push(L.NewFunction(lua.OpenBase))
	L.Call(0, 0)
	in.nextFn = L.NewFunction(in.next)
	in.ipairsIter = L.NewFunction(ipairsAux)

	real := newLib(L, in.baseLib(L.G.Global))
	real.RawSetString("next", in.nextFn)
	real.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	str := newLib(L, in.stringLib())
	str.RawSetString("gfind", str.RawGetString("gmatch"))
	maths := newLib(L, in.mathLib())
	maths.RawSetString("huge", lua.LNumber(math.Inf(1)))
	maths.RawSetString("pi", lua.LNumber(math.Pi))
	strView := in.readOnly(str, lua.LNil)
	real.RawSetString("string", strView)
	real.RawSetString("table", in.readOnly(newLib(L, in.tableLib()), lua.LNil))
	real.RawSetString("math", in.readOnly(maths, lua.LNil))
	real.RawSetString("redis", in.readOnly(in.redisLib(), lua.LNil))
	in.stringMeta(strView)

	// Reading a global that does not exist is an error, as in Redis,
	// whose globals' metatable scripts may read but not change.
	realMeta := L.NewTable()
	realMeta.RawSetString("__index", L.NewFunction(nonexistentGlobal))
	L.SetMetatable(real, realMeta)
	in.real = real
	in.env = in.readOnly(real, in.readOnly(realMeta, lua.LNil))
	real.RawSetString("_G", in.env)
	L.SetContext(&in.meter)
	return in
}

// nonexistentGlobal is the globals' __index: reading a global that does
// not exist is an error (Redis's luaProtectedTableError).
func nonexistentGlobal(L *lua.LState) int {
	if L.GetTop() != 2 {
		luaError(L, "Wrong number of arguments to luaProtectedTableError")
	}
	name, ok := coerceString(L.Get(2))
	if !ok {
		luaError(L, "Second argument to luaProtectedTableError must be a string or number")
	}
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
	return 0
}

// stringMeta sets the strings' metatable: their methods from the string
// library, and the arithmetic metamethods that convert them as Lua does
// (arith.go). Scripts see a read-only table with the methods alone, as
// Redis's strings' metatable.
func (in *interp) stringMeta(strView *lua.LTable) {
	L := in.L
	meta := L.NewTable()
	meta.RawSetString("__index", strView)
	for _, event := range slices.Sorted(maps.Keys(arithEvents)) {
		meta.RawSetString(event, L.NewFunction(strArith(event, arithEvents[event])))
	}
	shown := L.NewTable()
	shown.RawSetString("__index", strView)
	in.presented[meta] = in.readOnly(shown, lua.LNil)
	L.SetMetatable(lua.LString(""), meta)
}

// newLib is a table of fns, set in name order: the order a table's keys
// were set in is the order pairs visits them, and Go's maps have none.
func newLib(L *lua.LState, fns map[string]lua.LGFunction) *lua.LTable {
	t := L.NewTable()
	for _, name := range slices.Sorted(maps.Keys(fns)) {
		t.RawSetString(name, L.NewFunction(fns[name]))
	}
	return t
}

// readOnly returns an empty table that reads through to t and refuses
// every write, as Redis 7's read-only tables do: pairs, next and rawget
// see t's contents (baselib.go), rawset and setmetatable are refused, and
// getmetatable answers shown (nil, or the read-only metatable Redis's
// table has), never the view's own metatable.
func (in *interp) readOnly(t *lua.LTable, shown lua.LValue) *lua.LTable {
	L := in.L
	view := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", t)
	meta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errReadOnly)
		return 0
	}))
	L.SetMetatable(view, meta)
	in.protected[view] = true
	in.protected[t] = true
	in.viewOf[view] = t
	in.presented[view] = shown
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
