package script

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// A script's budget is counted, never timed: a time bound would stop a
// script on one replica and let it finish on another, and their states
// would part. gopher-lua, given a context, asks the context's Done once
// before each instruction it executes (mainLoopWithContext); the meter is
// that context, and counts. It charges the instructions that allocate too
// (a concatenation its operands' bytes, a table constructor and every
// store into a table a few words), so that a script cannot build gigabytes
// in a handful of instructions; the library functions that build strings
// charge what they build (lib.go). The charge is what the script
// allocates over its run, not what it holds at once: a deterministic
// count, the same on every replica.

// The budget of one run.
const (
	// maxInstructions bounds the instructions one script executes.
	maxInstructions = 10_000_000
	// maxMemory bounds the bytes one script allocates over its run.
	maxMemory = 32 << 20
)

// The errors a script ends with when it is over its budget.
var (
	errInstructions = fmt.Errorf("ERR Script ran more than %d instructions, the most a script may", maxInstructions)
	errMemory       = fmt.Errorf("ERR Script allocated more than %d bytes, the most a script may", maxMemory)
)

// Charges per instruction that allocates, in bytes.
const (
	tableCharge = 64 // a new table
	slotCharge  = 48 // a store into a table
	closeCharge = 64 // a closure
)

// meter is the context a run executes under: Done counts.
type meter struct {
	L            *lua.LState
	instructions int64
	bytes        int64
	over         error // the budget exceeded, once it is
}

// closed is a closed channel: Done's answer once the budget is exceeded.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// reset starts a new run's count.
func (m *meter) reset() { m.instructions, m.bytes, m.over = 0, 0, nil }

// Done is called before every instruction: it counts it, converts its
// operands where Lua 5.1 would (arith.go), charges what it allocates, and
// answers closed (the interpreter then raises Err) once the
// run is over its budget. Otherwise it answers nil, which never receives.
func (m *meter) Done() <-chan struct{} {
	if m.over != nil {
		return closed
	}
	if m.instructions++; m.instructions > maxInstructions {
		m.over = errInstructions
		return closed
	}
	if inst, ok := currentInstruction(m.L); ok {
		m.prepareInstruction(inst)
		m.chargeInstruction(inst)
	}
	if m.over != nil {
		return closed
	}
	return nil
}

// Err is the budget the run exceeded.
func (m *meter) Err() error { return m.over }

// Deadline: a run has none; it is counted.
func (m *meter) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value holds nothing.
func (m *meter) Value(any) any { return nil }

// charge counts n bytes allocated, and reports whether the run is still
// within its budget.
func (m *meter) charge(n int64) bool {
	if m.over != nil {
		return false
	}
	if m.bytes += n; m.bytes > maxMemory {
		m.over = errMemory
		return false
	}
	return true
}

// chargeSteps counts n instructions' worth of work a library function does
// in one call, and reports whether the run is still within its budget.
func (m *meter) chargeSteps(n int64) bool {
	if m.over != nil {
		return false
	}
	if m.instructions += n; m.instructions > maxInstructions {
		m.over = errInstructions
		return false
	}
	return true
}

// chargeInstruction charges what inst, about to execute, allocates.
func (m *meter) chargeInstruction(inst uint32) {
	switch int(inst >> 26) {
	case lua.OP_CONCAT:
		b, c := int(inst&0x1ff), int(inst>>9)&0x1ff
		var n int64
		for r := b; r <= c; r++ {
			switch v := m.L.Get(r + 1).(type) {
			case lua.LString:
				n += int64(len(v))
			default:
				n += 24
			}
		}
		m.charge(n)
	case lua.OP_NEWTABLE:
		m.charge(tableCharge + slotCharge*int64(int(inst&0x1ff)+int(inst>>9)&0x1ff))
	case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
		m.charge(slotCharge)
	case lua.OP_SETLIST:
		n := int64(inst & 0x1ff)
		if n == 0 { // up to the top of the stack: a call's results
			n = int64(m.L.GetTop())
		}
		m.charge(slotCharge * n)
	case lua.OP_CLOSURE:
		m.charge(closeCharge)
	}
}

// The interpreter keeps the instruction it is executing in fields it does
// not export (LState.currentFrame, callFrame.Fn and Pc); currentInstruction
// reads them at offsets found once by reflection. go.mod pins gopher-lua,
// and the offsets are checked when the package starts (and by its tests),
// so that a release of gopher-lua that moved them fails loudly instead of
// misreading memory.
var frameField, fnField, pcField = func() (frame, fn, pc uintptr) {
	st := reflect.TypeOf(lua.LState{})
	f, ok := st.FieldByName("currentFrame")
	if !ok || f.Type.Kind() != reflect.Pointer {
		panic("script: gopher-lua's LState has no currentFrame pointer")
	}
	ft := f.Type.Elem()
	fnF, ok1 := ft.FieldByName("Fn")
	pcF, ok2 := ft.FieldByName("Pc")
	if !ok1 || !ok2 || fnF.Type != reflect.TypeOf((*lua.LFunction)(nil)) || pcF.Type.Kind() != reflect.Int {
		panic("script: gopher-lua's callFrame has no Fn and Pc")
	}
	return f.Offset, fnF.Offset, pcF.Offset
}()

// currentInstruction returns the instruction L is about to execute.
func currentInstruction(L *lua.LState) (uint32, bool) {
	cf := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), frameField))
	if cf == nil {
		return 0, false
	}
	fn := *(**lua.LFunction)(unsafe.Add(cf, fnField))
	pc := *(*int)(unsafe.Add(cf, pcField))
	if fn == nil || fn.IsG || fn.Proto == nil || pc < 1 || pc > len(fn.Proto.Code) {
		return 0, false
	}
	return fn.Proto.Code[pc-1], true
}
