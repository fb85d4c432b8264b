package commands

import (
	"errors"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// parser appends to dst the engine commands that carry out args.
type parser func(args [][]byte, dst []engine.Command) ([]engine.Command, error)

// decisionParser parses "NAME key params... [COST n] [PARTIAL] [FORCE]
// [GLOBAL [STRICT|RELAXED]]" into op,
// whose parameters the engine's table gives.
func decisionParser(op engine.Op) parser {
	n := requiredParams(op)
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		if len(args) < 2+n {
			return dst, WrongArity(string(args[0]))
		}
		c, rest, err := parseLimit(op, args[1], args[2:])
		if err != nil {
			return dst, err
		}
		if err := parseOptions(rest, &c, true); err != nil {
			return dst, err
		}
		return append(dst, c), nil
	}
}

// parseOptions parses a decision's options: COST n (negative: a refund),
// within the bounds of c's op; FORCE, a cost that counts even when it does
// not fit; when partial is allowed, PARTIAL; and GLOBAL [STRICT|RELAXED]
// where c's op may be global. Each at most once, in any order.
func parseOptions(rest [][]byte, c *engine.Command, partial bool) error {
	costGiven := false
	for len(rest) > 0 {
		switch {
		case EqualFold(rest[0], "global") && c.Op.Spec().Flags&engine.FlagGlobal != 0 && c.Flags&engine.FlagGlobal == 0:
			c.Flags, rest = c.Flags|engine.FlagGlobal, rest[1:]
			if len(rest) > 0 && EqualFold(rest[0], "relaxed") && c.Op.Spec().Flags&engine.FlagRelaxed != 0 {
				c.Flags, rest = c.Flags|engine.FlagRelaxed, rest[1:]
			} else if len(rest) > 0 && EqualFold(rest[0], "strict") {
				rest = rest[1:]
			}
		case EqualFold(rest[0], "cost") && len(rest) >= 2 && !costGiven:
			costGiven = true
			v, err := paramArg(rest[1], &c.Op.Spec().Cost)
			if err != nil {
				return err
			}
			c.Args[3], rest = v, rest[2:]
		case EqualFold(rest[0], "partial") && partial && c.Flags&engine.FlagPartial == 0:
			c.Flags, rest = c.Flags|engine.FlagPartial, rest[1:]
		case EqualFold(rest[0], "force") && c.Flags&engine.FlagForce == 0:
			c.Flags, rest = c.Flags|engine.FlagForce, rest[1:]
		default:
			return ErrSyntax
		}
	}
	if c.Flags&engine.FlagGlobal != 0 || c.Flags&engine.FlagForce != 0 && c.Flags&engine.FlagPartial != 0 {
		// Rules across options (GLOBAL's, FORCE's), in the engine's words;
		// parseLimit checked each parameter before any option was read.
		return c.Check()
	}
	return nil
}

// parseThrottle parses redis-cell's "CL.THROTTLE key max_burst count period
// [quantity]".
func parseThrottle(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args) != 5 && len(args) != 6 {
		return dst, WrongArity("cl.throttle")
	}
	spec := engine.OpThrottle.Spec()
	c := engine.Command{Op: engine.OpThrottle, Key: args[1], Args: [4]int64{3: 1}}
	for i := range spec.Params {
		v, err := paramArg(args[2+i], &spec.Params[i])
		if err != nil {
			return dst, err
		}
		c.Args[i] = v
	}
	if len(args) == 6 {
		v, err := paramArg(args[5], &spec.Cost)
		if err != nil {
			return dst, err
		}
		c.Args[3] = v
	}
	if err := c.Check(); err != nil {
		return dst, err
	}
	return append(dst, c), nil
}

// keyParser turns each key argument into one op.
func keyParser(op engine.Op) parser {
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
