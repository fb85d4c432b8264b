package commands

import "github.com/rlserver/rlserver/engine"

// Redis's commands over several keys that caches and limiter stores send:
// MGET (Symfony's and Laravel's cache stores, Django's get_many), MSET
// (Django's set_many), KEYS (Python limits' reset on a cluster), and WATCH
// and UNWATCH (ulule/limiter before v3.10 wraps its reads and writes in
// WATCH ... MULTI ... EXEC).

// parseMGet parses "MGET key [key ...]": one GET a key, each on its shard;
// the server replies them as one array, nil for a key that holds no string.
func parseMGet(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	for _, k := range args[1:] {
		dst = append(dst, engine.Command{Op: engine.OpGet, Key: k})
	}
	return dst, nil
}

// parseMSet parses "MSET key value [key value ...]": one SET a key. Its
// keys share a slot (the spec's SameSlot), so one shard sets them all in
// one step, as atomic as Redis's MSET.
func parseMSet(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if len(args)%2 == 0 {
		return dst, WrongArity("mset")
	}
	for i := 1; i+1 < len(args); i += 2 {
		if len(args[i+1]) > engine.MaxValue {
			return dst, errValueTooLong
		}
		dst = append(dst, engine.Command{Op: engine.OpSet, Key: args[i], Value: args[i+1]})
	}
	return dst, nil
}

// multiKeySpecs are MGET, MSET, KEYS, WATCH and UNWATCH.
var multiKeySpecs = []*Spec{
	{
		ID: IDMGet, Name: "mget", Arity: -2, Flags: []string{"readonly", "fast"}, FirstKey: 1, LastKey: -1, KeyStep: 1,
		Categories: []string{"@read", "@string", "@fast"}, Group: "string", Since: "1.3.0",
		Complexity: "O(N) where N is the number of keys",
		Summary:    "The values of string keys, nil for a key that is absent or holds no string.",
		Args:       []Arg{argKeys}, Route: RouteKey, parse: parseMGet,
	},
	{
		ID: IDMSet, Name: "mset", Arity: -3, Flags: []string{"write", "denyoom"}, FirstKey: 1, LastKey: -1, KeyStep: 2,
		Categories: []string{"@write", "@string", "@slow"}, Group: "string", Since: "1.3.0",
		Complexity: "O(N) where N is the number of keys",
		Summary:    "Sets string keys, as SET without options, all at once. The keys must share a hash slot.",
		Args:       []Arg{{Name: "data", Type: "block", Multiple: true, Args: []Arg{argKey, argValue}}},
		Route:      RouteKey, SameSlot: true, parse: parseMSet,
	},
	{
		ID: IDKeys, Name: "keys", Arity: 2, Flags: []string{"readonly"},
		Categories: []string{"@keyspace", "@read", "@slow", "@dangerous"}, Group: "generic", Since: "1.3.0",
		Complexity: "O(N) with N being the number of keys",
		Summary:    "Every key that matches a glob-style pattern, from every shard.",
		Args:       []Arg{{Name: "pattern", Type: "pattern"}}, Route: RouteAll,
	},
	{
		ID: IDWatch, Name: "watch", Arity: -2, Flags: []string{"noscript", "loading", "stale", "fast"},
		FirstKey: 1, LastKey: -1, KeyStep: 1, Categories: []string{"@fast", "@transaction"}, Group: "transactions",
		Since: "1.3.0", Complexity: "O(1) for every key",
		Summary: "Watches keys: the next EXEC aborts (replies nil) if one of them changed. The keys must share a hash slot with the transaction's.",
		Args:    []Arg{argKeys}, Route: RouteServer,
	},
	{
		ID: IDUnwatch, Name: "unwatch", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast"},
		Categories: []string{"@fast", "@transaction"}, Group: "transactions", Since: "1.3.0", Complexity: "O(1)",
		Summary: "Forgets the keys WATCH watches.", Route: RouteServer,
	},
}
