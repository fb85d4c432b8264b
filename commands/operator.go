package commands

import "github.com/rlserver/rlserver/engine"

// The commands operators run rather than applications: RL.TOP, the
// heaviest keys of the last minute, and RL.BACKUP, a shard's state for
// rlserver backup.
var operatorSpecs = []*Spec{
	{
		ID: IDBackup, Name: "rl.backup", Arity: 2, Flags: []string{"admin", "noscript"},
		// Every key's state, as Redis's SAVE and SYNC are.
		Categories: []string{"@admin", "@slow", "@dangerous"}, Group: "server", Since: "1.2.0",
		Complexity: "O(N) where N is the number of keys of the shard",
		Summary: "A shard's state at one committed index, from its leader (MOVED elsewhere): " +
			"[shard, index, term, time_ms, taken_ms, size, frame]. rlserver backup calls it for every shard.",
		Args:  []Arg{{Name: "shard", Type: "integer"}},
		Route: RouteServer,
	},
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

// defaultTopCount is how many keys RL.TOP lists without COUNT.
const defaultTopCount = 10

// ParseTop parses RL.TOP [DENIED|ALLOWED] [COUNT n] (args[0] is the name).
func ParseTop(args [][]byte) (TopArgs, error) {
	a := TopArgs{Denied: true, Count: defaultTopCount}
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

// ParseBackup parses RL.BACKUP shard.
func ParseBackup(args [][]byte) (shard int, err error) {
	n, ok := ParseInt(args[1])
	if !ok || n < 0 || n > 1<<20 {
		return 0, ErrNotInteger
	}
	return int(n), nil
}
