package commands

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// param is one integer parameter of a decision command.
type param struct {
	name   string
	lo, hi int64
}

var (
	pLimit    = param{"limit", 1, engine.MaxCount}
	pLogLimit = param{"limit", 1, engine.MaxLogLimit}
	pWindow   = param{"window_ms", 1, engine.MaxDuration}
	pCapacity = param{"capacity", 1, engine.MaxCount}
	pRefill   = param{"refill_tokens", 1, engine.MaxCount}
	pRefillMs = param{"refill_ms", 1, engine.MaxDuration}
	pLeak     = param{"leak_tokens", 1, engine.MaxCount}
	pLeakMs   = param{"leak_ms", 1, engine.MaxDuration}
	pBurst    = param{"burst", 0, engine.MaxCount - 1}
	pCount    = param{"count", 1, engine.MaxCount}
	pPeriodMs = param{"period_ms", 1, engine.MaxDuration}
	pMaxBurst = param{"max_burst", 0, engine.MaxCount - 1}
	pPeriodS  = param{"period", 1, engine.MaxDuration / 1000}
	pCost     = param{"cost", -engine.MaxCount, engine.MaxCount}
	pQuantity = param{"quantity", 0, engine.MaxCount}
)

// decisionParser parses "NAME key p1 p2 [p3] [COST n] [PARTIAL]" into op.
func decisionParser(op engine.Op, params ...param) func([][]byte, []engine.Command) ([]engine.Command, error) {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		if len(args) < 2+len(params) {
			return dst, WrongArity(string(args[0]))
		}
		c, err := parseLimit(op, args[1], args[2:2+len(params)], params)
		if err != nil {
			return dst, err
		}
		if err := parseOptions(args[2+len(params):], &c, true); err != nil {
			return dst, err
		}
		return append(dst, c), nil
	}
}

// parseLimit builds the decision op on key from its parameters, with a cost
// of 1.
func parseLimit(op engine.Op, key []byte, args [][]byte, params []param) (engine.Command, error) {
	c := engine.Command{Op: op, Key: key}
	for i, p := range params {
		v, err := intArg(args[i], p.name, p.lo, p.hi)
		if err != nil {
			return c, err
		}
		c.Args[i] = v
	}
	c.Args[3] = 1
	return c, checkDrainTime(op, c.Args)
}

// parseOptions parses a decision's options: COST n (negative: a refund) and,
// when partial is allowed, PARTIAL.
func parseOptions(rest [][]byte, c *engine.Command, partial bool) error {
	costGiven := false
	for len(rest) > 0 {
		switch {
		case EqualFold(rest[0], "cost") && len(rest) >= 2 && !costGiven:
			costGiven = true
			v, err := intArg(rest[1], pCost.name, pCost.lo, pCost.hi)
			if err != nil {
				return err
			}
			c.Args[3], rest = v, rest[2:]
		case EqualFold(rest[0], "partial") && partial && c.Flags&engine.FlagPartial == 0:
			c.Flags, rest = c.Flags|engine.FlagPartial, rest[1:]
		default:
			return ErrSyntax
		}
	}
	return nil
}

// checkDrainTime refuses buckets that would take longer than MaxDuration to
// drain from full, which keeps every wait a bucket reports in range.
func checkDrainTime(op engine.Op, a [4]int64) error {
	var b engine.Bucket
	var what string
	switch op {
	case engine.OpToken:
		b, what = engine.Bucket{Capacity: a[0], Rate: a[1], Period: a[2]}, "capacity * refill_ms / refill_tokens"
	case engine.OpLeaky, engine.OpShape:
		b, what = engine.Bucket{Capacity: a[0], Rate: a[1], Period: a[2]}, "capacity * leak_ms / leak_tokens"
	case engine.OpGCRA:
		b, what = engine.Bucket{Capacity: a[0] + 1, Rate: a[1], Period: a[2]}, "(burst + 1) * period_ms / count"
	default:
		return nil
	}
	if b.DrainTime() > engine.MaxDuration {
		return fmt.Errorf("ERR %s (the time to drain a full bucket) must be at most %d ms", what, int64(engine.MaxDuration))
	}
	return nil
}

// parseThrottle parses redis-cell's "CL.THROTTLE key max_burst count period
// [quantity]".
func parseThrottle(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args) != 5 && len(args) != 6 {
		return dst, WrongArity("cl.throttle")
	}
	c := engine.Command{Op: engine.OpThrottle, Key: args[1], Args: [4]int64{0, 0, 0, 1}}
	for i, p := range []param{pMaxBurst, pCount, pPeriodS, pQuantity}[:len(args)-2] {
		v, err := intArg(args[2+i], p.name, p.lo, p.hi)
		if err != nil {
			return dst, err
		}
		c.Args[i] = v
	}
	t := engine.Throttle{MaxBurst: c.Args[0], Count: c.Args[1], Period: c.Args[2]}
	if t.Emission() == 0 {
		return dst, fmt.Errorf("ERR zero rates are not supported: count must not exceed the nanoseconds in period")
	}
	if t.Tolerance() > engine.MaxDuration*1_000_000 {
		return dst, fmt.Errorf("ERR (max_burst + 1) * period / count must be at most %d s", int64(engine.MaxDuration/1000))
	}
	return append(dst, c), nil
}

// keyParser turns each key argument into one op.
func keyParser(op engine.Op) func([][]byte, []engine.Command) ([]engine.Command, error) {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		for _, k := range args[1:] {
			dst = append(dst, engine.Command{Op: op, Key: k})
		}
		return dst, nil
	}
}

// parseMemoryUsage parses "MEMORY USAGE key [SAMPLES count]" (the sample
// count is accepted and needs nothing: rlserver knows a key's size).
func parseMemoryUsage(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	switch {
	case len(args) == 3:
	case len(args) == 5 && EqualFold(args[3], "samples"):
		if _, ok := ParseInt(args[4]); !ok {
			return dst, ErrNotInteger
		}
	default:
		return dst, ErrSyntax
	}
	return append(dst, engine.Command{Op: engine.OpUsage, Key: args[2]}), nil
}

// ScanArgs are SCAN's arguments.
type ScanArgs struct {
	Cursor uint64
	Match  []byte // nil: every key
	Count  int64
	Kind   engine.Kind // 0: every kind
	// UnknownType is set when TYPE names no kind rlserver has, so nothing
	// matches (Redis answers an empty scan for a type it has no key of).
	UnknownType bool
}

// ParseScan parses "SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]".
func ParseScan(args [][]byte) (ScanArgs, error) {
	a := ScanArgs{Count: 10}
	cursor, ok := parseUint(args[1])
	if !ok {
		return a, errInvalidCursor
	}
	a.Cursor = cursor
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, ErrSyntax
		}
		switch opt, val := args[i], args[i+1]; {
		case EqualFold(opt, "match"):
			a.Match = val
		case EqualFold(opt, "count"):
			n, ok := ParseInt(val)
			if !ok {
				return a, ErrNotInteger
			}
			if n < 1 {
				return a, ErrSyntax
			}
			a.Count = min(n, 1<<20)
		case EqualFold(opt, "type"):
			k, ok := engine.KindByName(strings.ToLower(string(val))) // Redis ignores case here
			a.Kind, a.UnknownType = k, !ok
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

var errInvalidCursor = errors.New("ERR invalid cursor")

// parseUint parses an unsigned decimal, as Redis's cursors are.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' || v > (1<<64-1-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// ParseFlush checks FLUSHALL/FLUSHDB's optional ASYNC or SYNC.
func ParseFlush(args [][]byte) error {
	if len(args) > 2 || (len(args) == 2 && !EqualFold(args[1], "async") && !EqualFold(args[1], "sync")) {
		return ErrSyntax
	}
	return nil
}
