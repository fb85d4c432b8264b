package commands

import (
	"github.com/rlserver/rlserver/engine"
)

// parseAcquire parses "RL.ACQUIRE key limit lease_ms".
func parseAcquire(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args) != 4 {
		return dst, WrongArity("rl.acquire")
	}
	c, _, err := parseLimit(engine.OpAcquire, args[1], args[2:])
	if err != nil {
		return dst, err
	}
	return append(dst, c), nil
}

// parseRelease parses "RL.RELEASE key lease_id".
func parseRelease(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	id, err := paramArg(args[2], &engine.OpRelease.Spec().Params[0])
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

// parseCheck parses "RL.CHECK key policy [COST n] [PARTIAL] [FORCE]".
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
