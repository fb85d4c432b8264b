package commands

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/engine"
)

// RL.ALL checks several limits as one: "RL.ALL SLIDING {u}:s 10 1000
// FIXED {u}:m 100 60000 [COST n] [FORCE]". Each limit is an algorithm's
// word, then what its command takes (POLICY: key and policy name); COST and
// FORCE apply to all.

var (
	errAllEmpty    = errors.New("ERR RL.ALL needs at least one limit")
	errAllTooMany  = fmt.Errorf("ERR RL.ALL takes at most %d limits", engine.MaxAllLimits)
	errAllNotLimit = errors.New("ERR RL.ALL limits are " + algorithmWords("POLICY") + ", each followed by its key and parameters")
)

// allLimit is one limit of an RL.ALL: its words, algorithm first.
type allLimit struct {
	algo int // index in policyAlgorithms, or -1 for POLICY
	args [][]byte
}

// splitAll cuts RL.ALL's arguments (after the name) into its limits and the
// trailing options. It checks the shape only; the limits' values are parsed
// later.
func splitAll(args [][]byte, fn func(l allLimit)) (options [][]byte, err error) {
	for len(args) > 0 {
		if EqualFold(args[0], "cost") || EqualFold(args[0], "force") {
			return args, nil
		}
		l, n := allLimit{algo: -2}, 0
		if EqualFold(args[0], "policy") {
			l.algo, n = -1, 3
		}
		for i, a := range policyAlgorithms {
			if EqualFold(args[0], a.word) {
				l.algo, n = i, 2+requiredParams(a.op)
				if len(args) >= n {
					n = 2 + limitWords(a.op, args[2:])
				}
			}
		}
		if l.algo == -2 || len(args) < n {
			return nil, errAllNotLimit
		}
		l.args, args = args[:n], args[n:]
		fn(l)
	}
	return nil, nil
}

// allKeys is RL.ALL's key extraction, for cluster routing and COMMAND
// GETKEYS: the key of each limit, second word of each.
func allKeys(args [][]byte, fn func(key []byte)) {
	_, _ = splitAll(args[1:], func(l allLimit) { fn(l.args[1]) })
}

// parseAll parses RL.ALL into its head op followed by one op per limit.
func parseAll(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	head := len(dst)
	dst = append(dst, engine.Command{Op: engine.OpAll, Key: args[1]})
	var err error
	options, splitErr := splitAll(args[1:], func(l allLimit) {
		if err != nil {
			return
		}
		var c engine.Command
		if l.algo == -1 {
			c, err = parseCheckLimit(l.args[1:])
		} else {
			c, _, err = parseLimit(policyAlgorithms[l.algo].op, l.args[1], l.args[2:])
		}
		for _, prev := range dst[head+1:] {
			if err == nil && string(prev.Key) == string(c.Key) {
				err = fmt.Errorf("ERR RL.ALL names the key '%s' twice", c.Key)
			}
		}
		dst = append(dst, c)
	})
	members := dst[head+1:]
	switch {
	case splitErr != nil:
		return dst[:head], splitErr
	case err != nil:
		return dst[:head], err
	case len(members) == 0:
		return dst[:head], errAllEmpty
	case len(members) > engine.MaxAllLimits:
		return dst[:head], errAllTooMany
	}
	cost := engine.Command{Op: engine.OpAll, Args: [4]int64{3: 1}}
	if err := parseOptions(options, &cost, false); err != nil {
		return dst[:head], err
	}
	for i := range members {
		members[i].Args[3] = cost.Args[3]
		members[i].Flags |= cost.Flags & engine.FlagForce
	}
	dst[head].Args[0] = int64(len(members))
	dst[head].Key = members[0].Key
	return dst, nil
}
