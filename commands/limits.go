package commands

import (
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/calendar"
)

var (
	// pOffset is RL.QUOTA's OFFSET as the command takes it, in minutes (the
	// engine holds it in ms).
	pOffset         = engine.Param{Name: "offset", Min: -engine.MaxQuotaOffset / 60_000, Max: engine.MaxQuotaOffset / 60_000}
	errNoSuchPeriod = fmt.Errorf("ERR no such period: use DAY, WEEK, MONTH or YEAR")
)

// parsePeriod reads RL.QUOTA's period word.
func parsePeriod(b []byte) (calendar.Period, error) {
	for p := calendar.Daily; p <= calendar.Yearly; p++ {
		if EqualFold(b, strings.ToLower(p.String())) {
			return p, nil
		}
	}
	return 0, errNoSuchPeriod
}

// parseQuotaLimit parses "key limit DAY|WEEK|MONTH|YEAR [OFFSET minutes]"
// from args and returns the op (cost 1) and the arguments after it.
func parseQuotaLimit(args [][]byte) (engine.Command, [][]byte, error) {
	c := engine.Command{Op: engine.OpQuota, Key: args[0]}
	if len(args) < 3 {
		return c, nil, ErrSyntax
	}
	limit, err := paramArg(args[1], engine.OpQuota.Spec().Params[0])
	if err != nil {
		return c, nil, err
	}
	period, err := parsePeriod(args[2])
	if err != nil {
		return c, nil, err
	}
	c.Args = [4]int64{limit, int64(period), 0, 1}
	rest := args[3:]
	if len(rest) >= 2 && EqualFold(rest[0], "offset") {
		minutes, err := paramArg(rest[1], pOffset)
		if err != nil {
			return c, nil, err
		}
		c.Args[2], rest = minutes*60_000, rest[2:]
	}
	return c, rest, nil
}

// parseQuota parses "RL.QUOTA key limit period [OFFSET minutes] [COST n]
// [PARTIAL]".
func parseQuota(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	c, rest, err := parseQuotaLimit(args[1:])
	if err != nil {
		return dst, err
	}
	if err := parseOptions(rest, &c, true); err != nil {
		return dst, err
	}
	return append(dst, c), nil
}

// parseAcquire parses "RL.ACQUIRE key limit lease_ms".
func parseAcquire(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args) != 4 {
		return dst, WrongArity("rl.acquire")
	}
	c, err := parseLimit(engine.OpAcquire, args[1], args[2:])
	if err != nil {
		return dst, err
	}
	return append(dst, c), nil
}

// parseRelease parses "RL.RELEASE key lease_id".
func parseRelease(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	id, err := paramArg(args[2], engine.OpRelease.Spec().Params[0])
	if err != nil {
		return dst, err
	}
	return append(dst, engine.Command{Op: engine.OpRelease, Key: args[1], Args: [4]int64{id}}), nil
}

// parseCheckLimit parses "key policy" from args into RL.CHECK's op (cost 1).
func parseCheckLimit(args [][]byte) (engine.Command, error) {
	c := engine.Command{Op: engine.OpCheck, Key: args[0], Value: args[1], Args: [4]int64{3: 1}}
	return c, c.Check()
}

// parseCheck parses "RL.CHECK key policy [COST n] [PARTIAL]".
func parseCheck(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	c, err := parseCheckLimit(args[1:3])
	if err != nil {
		return dst, err
	}
	if err := parseOptions(args[3:], &c, true); err != nil {
		return dst, err
	}
	return append(dst, c), nil
}
