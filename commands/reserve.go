package commands

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// RL.RESERVE charges an estimate now and RL.SETTLE the actual cost later:
//
//	RL.RESERVE <ALGORITHM> key <parameters> COST estimate [TTL ms]
//	RL.SETTLE id actual
//
// The algorithm is a word of RL.POLICY SET's; its parameters are those its
// own command takes. A reservation's id names it whole, so that RL.SETTLE
// needs nothing else:
//
//	{tag}seq:key
//
// where seq is the shard's number for it and tag a short hash tag of the
// key's slot (cluster's SlotTag): a cluster client that hashes the id, the
// command's first argument, reaches the key's shard, and the server reads
// the key from the id, for routing, ACLs and the shard.

// reserveSpecs are RL.RESERVE and RL.SETTLE.
var reserveSpecs = []*Spec{
	{
		ID: IDReserve, Name: "rl.reserve", Arity: -7, Flags: []string{"write", "denyoom", "fast"},
		FirstKey: 2, LastKey: 2, KeyStep: 1, Categories: []string{"@write", "@ratelimit", "@fast"},
		Group: "ratelimit", Since: "1.4.0", Complexity: "O(1) (RL.LOG: O(N) in its entries)",
		Summary: "Decides an estimate as the algorithm's command does and, when granted, keeps it as a reservation " +
			"to settle at the actual cost. Replies the decision's fields and the reservation's id (nil when refused).",
		Args: []Arg{{Name: "algorithm", Type: "oneof", Args: reserveAlgorithmArgs()}, argKey,
			{Name: "parameters", Type: "string", Multiple: true}, {Name: "estimate", Type: "integer", Token: "COST"},
			{Name: "ttl", Type: "integer", Token: "TTL", Optional: true}},
		Route: RouteKey, parse: parseReserve,
	},
	{
		ID: IDSettle, Name: "rl.settle", Arity: 3, Flags: []string{"write", "denyoom", "fast"},
		FirstKey: 1, LastKey: 1, KeyStep: 1, Categories: []string{"@write", "@ratelimit", "@fast"},
		Group: "ratelimit", Since: "1.4.0", Complexity: "O(1) (RL.LOG: O(N) in its entries)",
		Summary: "Settles a reservation at its actual cost, once: refunds the difference or charges the excess, " +
			"always counted. A repeat answers the first settlement's decision.",
		Args:  []Arg{{Name: "id", Type: "key"}, {Name: "actual", Type: "integer"}},
		Route: RouteKey, parse: parseSettle,
	},
}

// reserveAlgorithmArgs documents the words RL.RESERVE's algorithm is one
// of: RL.POLICY SET's.
func reserveAlgorithmArgs() []Arg {
	var out []Arg
	for _, a := range policyAlgorithms {
		out = append(out, Arg{Name: a.word, Type: "pure-token", Token: strings.ToUpper(a.word)})
	}
	return out
}

var (
	errReserveAlgorithm = errors.New("ERR unknown algorithm: use " + algorithmWords())
	errReserveCost      = errors.New("ERR RL.RESERVE needs COST estimate: the units to charge now")
	errReservationID    = errors.New("ERR invalid reservation id: RL.SETTLE takes the id RL.RESERVE replied")
)

// parseReserve parses RL.RESERVE into its engine command.
func parseReserve(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	var op engine.Op
	for _, a := range policyAlgorithms {
		if EqualFold(args[1], a.word) {
			op = a.op
		}
	}
	if op == 0 {
		return dst, errReserveAlgorithm
	}
	if len(args) < 3+requiredParams(op) {
		return dst, WrongArity("rl.reserve")
	}
	limit, rest, err := parseLimit(op, args[2], args[3:])
	if err != nil {
		return dst, err
	}
	estimate, ttl := int64(0), int64(engine.DefaultReservationTTL)
	costParam := engine.OpReserve.Spec().Cost
	ttlParam := engine.ReserveOptions[0].InCommand()
	ttlGiven := false
	for len(rest) >= 2 {
		var err error
		switch {
		case EqualFold(rest[0], "cost") && estimate == 0:
			estimate, err = paramArg(rest[1], &costParam)
		case EqualFold(rest[0], "ttl") && !ttlGiven:
			ttlGiven = true
			ttl, err = paramArg(rest[1], &ttlParam)
		default:
			return dst, ErrSyntax
		}
		if err != nil {
			return dst, err
		}
		rest = rest[2:]
	}
	switch {
	case len(rest) > 0:
		return dst, ErrSyntax
	case estimate == 0:
		return dst, errReserveCost
	}
	c := engine.ReserveCommand(op, args[2], [3]int64{limit.Args[0], limit.Args[1], limit.Args[2]}, estimate, ttl)
	return append(dst, c), c.Check()
}

// parseSettle parses "RL.SETTLE id actual".
func parseSettle(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	seq, key, ok := ParseReservationID(args[1])
	if !ok {
		return dst, errReservationID
	}
	actual, err := paramArg(args[2], &engine.OpSettle.Spec().Params[1])
	if err != nil {
		return dst, err
	}
	return append(dst, engine.Command{Op: engine.OpSettle, Key: key, Args: [4]int64{seq, actual}}), nil
}

// settleKeys is RL.SETTLE's key extraction: the key its id names (none
// when the id is not one).
func settleKeys(args [][]byte, fn func(key []byte)) {
	if len(args) > 1 {
		if _, key, ok := ParseReservationID(args[1]); ok {
			fn(key)
		}
	}
}

// AppendReservationID appends the id of reservation seq of key, whose
// slot's tag is tag.
func AppendReservationID(b []byte, tag string, seq int64, key []byte) []byte {
	b = append(append(append(b, '{'), tag...), '}')
	b = strconv.AppendInt(b, seq, 10)
	return append(append(b, ':'), key...)
}

// ParseReservationID reads an id AppendReservationID wrote: its seq and
// its key (aliasing id). The tag is not checked: routing follows the key.
func ParseReservationID(id []byte) (seq int64, key []byte, ok bool) {
	end := bytes.IndexByte(id, '}')
	if len(id) < 2 || id[0] != '{' || end < 0 {
		return 0, nil, false
	}
	num, key, found := bytes.Cut(id[end+1:], []byte{':'})
	seq, isInt := ParseInt(num)
	if !found || !isInt || seq < 1 || len(key) == 0 {
		return 0, nil, false
	}
	return seq, key, true
}
