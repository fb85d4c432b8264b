package commands

import (
	"errors"
	"fmt"
	"math"

	"github.com/rlserver/rlserver/engine"
)

// Redis's string commands, so that limiters written for Redis (INCR and
// EXPIRE, SET NX PX) run unchanged. Their errors are Redis's.

var (
	errExpireOptions = errors.New("ERR NX and XX, GT or LT options at the same time are not compatible")
	errExpireGTLT    = errors.New("ERR GT and LT options at the same time are not compatible")
	errDecrOverflow  = errors.New("ERR decrement would overflow")
	errValueTooLong  = fmt.Errorf("ERR string exceeds maximum allowed size (%d bytes)", engine.MaxValue)
)

func invalidExpire(cmd string) error {
	return fmt.Errorf("ERR invalid expire time in '%s' command", cmd)
}

// parseGet parses "GET key".
func parseGet(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	return append(dst, engine.Command{Op: engine.OpGet, Key: args[1]}), nil
}

// parseSet parses "SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]".
func parseSet(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	c := engine.Command{Op: engine.OpSet, Key: args[1], Value: args[2]}
	if len(c.Value) > engine.MaxValue {
		return dst, errValueTooLong
	}
	expiries := 0
	for i := 3; i < len(args); i++ {
		opt := args[i]
		var flag engine.Flags
		switch {
		case EqualFold(opt, "nx"):
			flag = engine.FlagNX
		case EqualFold(opt, "xx"):
			flag = engine.FlagXX
		case EqualFold(opt, "get"):
			flag = engine.FlagGet
		case EqualFold(opt, "keepttl"):
			flag = engine.FlagKeepTTL
			expiries++
		case EqualFold(opt, "ex"), EqualFold(opt, "px"), EqualFold(opt, "exat"), EqualFold(opt, "pxat"):
			if i+1 == len(args) {
				return dst, ErrSyntax
			}
			i++
			v, ok := ParseInt(args[i])
			if !ok {
				return dst, ErrNotInteger
			}
			unit, mode := int64(1), int64(engine.ExpiryRelative)
			if EqualFold(opt, "ex") || EqualFold(opt, "exat") {
				unit = 1000
			}
			if EqualFold(opt, "exat") || EqualFold(opt, "pxat") {
				mode = engine.ExpiryAbsolute
			}
			ms, err := expiryMs(v, unit, mode, "set")
			if err != nil || ms <= 0 {
				return dst, invalidExpire("set")
			}
			c.Args[0], c.Args[1] = ms, mode
			expiries++
		default:
			return dst, ErrSyntax
		}
		if c.Flags&flag != 0 && flag != engine.FlagGet {
			return dst, ErrSyntax
		}
		c.Flags |= flag
	}
	if expiries > 1 || c.Flags&(engine.FlagNX|engine.FlagXX) == engine.FlagNX|engine.FlagXX {
		return dst, ErrSyntax
	}
	return append(dst, c), nil
}

// expiryMs converts an expiry of v units (1000: seconds) to ms, refusing
// what is beyond the engine's bounds as Redis refuses what overflows. A
// time before the engine's lower bound is that bound: for EXPIRE and its
// kin any time in the past deletes the key, as it does in Redis, which
// refuses only seconds that overflow in milliseconds.
func expiryMs(v, unit, mode int64, cmd string) (int64, error) {
	limit := int64(engine.MaxDuration)
	if mode == engine.ExpiryAbsolute {
		limit = engine.MaxExpiry
	}
	if v > limit/unit || v < math.MinInt64/unit {
		return 0, invalidExpire(cmd)
	}
	return max(v*unit, -limit), nil
}

// parseSetNX parses "SETNX key value" (the server replies 1 or 0).
func parseSetNX(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args[2]) > engine.MaxValue {
		return dst, errValueTooLong
	}
	return append(dst, engine.Command{Op: engine.OpSet, Key: args[1], Value: args[2], Flags: engine.FlagNX}), nil
}

// parseGetSet parses "GETSET key value": SET key value GET.
func parseGetSet(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args[2]) > engine.MaxValue {
		return dst, errValueTooLong
	}
	return append(dst, engine.Command{Op: engine.OpSet, Key: args[1], Value: args[2], Flags: engine.FlagGet}), nil
}

// setexParser parses "SETEX key seconds value" (unit 1000) or "PSETEX key
// milliseconds value" (unit 1).
func setexParser(name string, unit int64) func([][]byte, []engine.Command) ([]engine.Command, error) {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		v, ok := ParseInt(args[2])
		if !ok {
			return dst, ErrNotInteger
		}
		ms, err := expiryMs(v, unit, engine.ExpiryRelative, name)
		if err != nil || ms <= 0 {
			return dst, invalidExpire(name)
		}
		if len(args[3]) > engine.MaxValue {
			return dst, errValueTooLong
		}
		return append(dst, engine.Command{Op: engine.OpSet, Key: args[1], Value: args[3], Args: [4]int64{ms, engine.ExpiryRelative}}), nil
	}
}

// incrParser parses INCR and DECR (by 1 or -1: fixed) and INCRBY and DECRBY
// (sign: the sign applied to their argument).
func incrParser(fixed, sign int64) func([][]byte, []engine.Command) ([]engine.Command, error) {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		by := fixed
		if fixed == 0 {
			v, ok := ParseInt(args[2])
			if !ok {
				return dst, ErrNotInteger
			}
			if sign < 0 && v == -1<<63 {
				return dst, errDecrOverflow
			}
			by = sign * v
		}
		return append(dst, engine.Command{Op: engine.OpIncrBy, Key: args[1], Args: [4]int64{by}}), nil
	}
}

// expireParser parses EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: "key time
// [NX|XX|GT|LT]", time in unit ms (1000: seconds), absolute or not.
func expireParser(name string, unit, mode int64) func([][]byte, []engine.Command) ([]engine.Command, error) {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		v, ok := ParseInt(args[2])
		if !ok {
			return dst, ErrNotInteger
		}
		c := engine.Command{Op: engine.OpExpire, Key: args[1]}
		for _, opt := range args[3:] {
			switch {
			case EqualFold(opt, "nx"):
				c.Flags |= engine.FlagNX
			case EqualFold(opt, "xx"):
				c.Flags |= engine.FlagXX
			case EqualFold(opt, "gt"):
				c.Flags |= engine.FlagGT
			case EqualFold(opt, "lt"):
				c.Flags |= engine.FlagLT
			default:
				return dst, fmt.Errorf("ERR Unsupported option %s", opt)
			}
		}
		f := c.Flags
		if f&engine.FlagNX != 0 && f&(engine.FlagXX|engine.FlagGT|engine.FlagLT) != 0 {
			return dst, errExpireOptions
		}
		if f&engine.FlagGT != 0 && f&engine.FlagLT != 0 {
			return dst, errExpireGTLT
		}
		ms, err := expiryMs(v, unit, mode, name)
		if err != nil {
			return dst, err
		}
		if mode == engine.ExpiryAbsolute {
			ms = max(ms, 0) // any time in the past deletes the key
		}
		c.Args[0], c.Args[1] = ms, mode
		return append(dst, c), nil
	}
}

// parsePersist parses "PERSIST key".
func parsePersist(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	return append(dst, engine.Command{Op: engine.OpExpire, Key: args[1], Args: [4]int64{0, engine.ExpiryPersist}}), nil
}
