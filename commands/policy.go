package commands

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/engine"
)

var errPolicyName = fmt.Errorf("ERR a policy name is 1 to %d letters, digits or _ - . /", engine.MaxPolicyName)

// policyAlgorithms are the algorithms RL.POLICY SET takes, with their
// parameters as the commands of the same name take them.
var policyAlgorithms = []struct {
	word   string
	op     engine.Op
	params []param
}{
	{"sliding", engine.OpSliding, []param{pLimit, pWindow}},
	{"fixed", engine.OpFixed, []param{pLimit, pWindow}},
	{"log", engine.OpLog, []param{pLogLimit, pWindow}},
	{"token", engine.OpToken, []param{pCapacity, pRefill, pRefillMs}},
	{"leaky", engine.OpLeaky, []param{pCapacity, pLeak, pLeakMs}},
	{"gcra", engine.OpGCRA, []param{pBurst, pCount, pPeriodMs}},
	{"shape", engine.OpShape, []param{pCapacity, pLeak, pLeakMs}},
	{"quota", engine.OpQuota, nil}, // parsed by parseQuotaLimit
}

var errPolicyAlgorithm = errors.New("ERR unknown algorithm: use SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE or QUOTA")

// ParsePolicySet parses "RL.POLICY SET name ALGORITHM params... [SHADOW]"
// into the op that defines the policy on a shard.
func ParsePolicySet(args [][]byte) (engine.Command, error) {
	set := engine.Command{Op: engine.OpPolicySet}
	if len(args) < 5 {
		return set, WrongArity("rl.policy|set")
	}
	name, algo, rest := args[2], args[3], args[4:]
	if !engine.ValidPolicyName(name) {
		return set, errPolicyName
	}
	if n := len(rest); n > 0 && EqualFold(rest[n-1], "shadow") {
		set.Flags, rest = engine.FlagShadow, rest[:n-1]
	}
	for _, a := range policyAlgorithms {
		if !EqualFold(algo, a.word) {
			continue
		}
		var limit engine.Command
		var err error
		if a.op == engine.OpQuota {
			var more [][]byte
			limit, more, err = parseQuotaLimit(append([][]byte{name}, rest...))
			if err == nil && len(more) > 0 {
				err = ErrSyntax
			}
		} else {
			if len(rest) != len(a.params) {
				return set, ErrSyntax
			}
			limit, err = parseLimit(a.op, name, rest, a.params)
		}
		if err != nil {
			return set, err
		}
		set.Value, set.Args = name, limit.Args
		set.Args[3] = int64(a.op)
		return set, nil
	}
	return set, errPolicyAlgorithm
}

// ParsePolicyName checks the name RL.POLICY GET and DEL take.
func ParsePolicyName(name []byte) error {
	if !engine.ValidPolicyName(name) {
		return errPolicyName
	}
	return nil
}
