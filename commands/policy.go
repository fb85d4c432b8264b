package commands

import (
	"errors"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// algorithm is a decision a policy may run, or one of RL.ALL's limits: its
// word (lower case) and op, from the engine's table.
type algorithm struct {
	word string
	op   engine.Op
}

// policyAlgorithms are the algorithms RL.POLICY SET and RL.ALL take: the
// engine's ops with a Word, in op order. Each takes its parameters as the
// command of the same name does.
var policyAlgorithms = func() []algorithm {
	var out []algorithm
	engine.Ops(func(op engine.Op, spec *engine.OpSpec) {
		if spec.Word != "" {
			out = append(out, algorithm{strings.ToLower(spec.Word), op})
		}
	})
	return out
}()

// algorithmWords lists the algorithms' words and then more, as a sentence
// does: "SLIDING, FIXED, ... or QUOTA".
func algorithmWords(more ...string) string {
	var words []string
	for _, a := range policyAlgorithms {
		words = append(words, strings.ToUpper(a.word))
	}
	words = append(words, more...)
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

var errPolicyAlgorithm = errors.New("ERR unknown algorithm: use " + algorithmWords())

// ParsePolicySet parses "RL.POLICY SET name ALGORITHM params... [SHADOW |
// GLOBAL [STRICT|RELAXED]]" into the op that defines the policy on a shard.
func ParsePolicySet(args [][]byte) (engine.Command, error) {
	set := engine.Command{Op: engine.OpPolicySet}
	if len(args) < 5 {
		return set, WrongArity("rl.policy|set")
	}
	name, algo, rest := args[2], args[3], args[4:]
	if err := ParsePolicyName(name); err != nil {
		return set, err
	}
	set.Flags, rest = policyFlags(rest)
	for _, a := range policyAlgorithms {
		if !EqualFold(algo, a.word) {
			continue
		}
		// A limit whose length is fixed is measured before it is read; one
		// with an optional parameter, once it is read.
		required, all := requiredParams(a.op), len(a.op.Spec().Params)
		if len(rest) < required || (required == all && len(rest) != all) {
			return set, ErrSyntax
		}
		limit, more, err := parseLimit(a.op, name, rest)
		if err == nil && len(more) > 0 {
			err = ErrSyntax
		}
		if err != nil {
			return set, err
		}
		set.Value, set.Args = name, limit.Args
		set.Args[3] = int64(a.op)
		return set, set.Check()
	}
	return set, errPolicyAlgorithm
}

// policyFlags reads the words that end a policy's definition: SHADOW, or
// GLOBAL and its mode; it returns the flags and the words before them.
func policyFlags(rest [][]byte) (engine.Flags, [][]byte) {
	n := len(rest)
	switch {
	case n > 0 && EqualFold(rest[n-1], "shadow"):
		return engine.FlagShadow, rest[:n-1]
	case n > 0 && EqualFold(rest[n-1], "global"):
		return engine.FlagGlobal, rest[:n-1]
	case n > 1 && EqualFold(rest[n-2], "global") && EqualFold(rest[n-1], "strict"):
		return engine.FlagGlobal, rest[:n-2]
	case n > 1 && EqualFold(rest[n-2], "global") && EqualFold(rest[n-1], "relaxed"):
		return engine.FlagGlobal | engine.FlagRelaxed, rest[:n-2]
	}
	return 0, rest
}

// ParsePolicyName checks the name RL.POLICY GET and DEL take.
func ParsePolicyName(name []byte) error {
	c := engine.Command{Op: engine.OpPolicyDel, Value: name}
	return c.Check()
}
