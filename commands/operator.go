package commands

import "github.com/rlserver/rlserver/engine"

// The commands operators run rather than applications: RL.TOP, the
// heaviest keys of the last minute.
var operatorSpecs = []*Spec{
	{
		ID: IDTop, Name: "rl.top", Arity: -1, Flags: []string{"readonly", "loading", "stale"},
		// It names every tenant's keys, as SCAN does: @read and @keyspace,
		// not @ratelimit.
		Categories: []string{"@read", "@keyspace", "@slow"}, Group: "ratelimit", Since: "1.2.0",
		Complexity: "O(shards)",
		Summary: "The heaviest keys of the last minute on every shard, denied (default) or allowed: " +
			"[key, decisions, error] each, approximate counts that overstate by at most error.",
		Args: []Arg{{Name: "outcome", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "denied", Type: "pure-token", Token: "DENIED"}, {Name: "allowed", Type: "pure-token", Token: "ALLOWED"}}},
			{Name: "count", Type: "integer", Token: "COUNT", Optional: true}},
		Route: RouteServer,
	},
}

// TopArgs are RL.TOP's arguments.
type TopArgs struct {
	Denied bool // the decisions denied (the default), or allowed
	Count  int  // how many keys, 10 by default
}

// DefaultTopCount is how many keys RL.TOP lists without COUNT.
const DefaultTopCount = 10

// ParseTop parses RL.TOP [DENIED|ALLOWED] [COUNT n] (args[0] is the name).
func ParseTop(args [][]byte) (TopArgs, error) {
	a := TopArgs{Denied: true, Count: DefaultTopCount}
	for i := 1; i < len(args); i++ {
		switch {
		case EqualFold(args[i], "denied"):
			a.Denied = true
		case EqualFold(args[i], "allowed"):
			a.Denied = false
		case EqualFold(args[i], "count") && i+1 < len(args):
			n, ok := ParseInt(args[i+1])
			if !ok {
				return a, ErrNotInteger
			}
			if err := engine.OpTop.Spec().Params[1].Check(n); err != nil {
				return a, err
			}
			a.Count = int(n)
			i++
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}
