package commands

import (
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// Argument documentation shared by the decision commands.
var (
	argKey     = Arg{Name: "key", Type: "key"}
	argKeys    = Arg{Name: "key", Type: "key", Multiple: true}
	argCost    = Arg{Name: "cost", Type: "integer", Token: "COST", Optional: true}
	argPartial = Arg{Name: "partial", Type: "pure-token", Token: "PARTIAL", Optional: true}
	argGlobal  = Arg{Name: "global", Type: "block", Token: "GLOBAL", Optional: true, Args: []Arg{
		{Name: "mode", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "strict", Type: "pure-token", Token: "STRICT"}, {Name: "relaxed", Type: "pure-token", Token: "RELAXED"}}}}}
	argForce = Arg{Name: "force", Type: "pure-token", Token: "FORCE", Optional: true}
)

// allAlgorithmArgs documents the words RL.ALL's limits start with: the
// algorithms, then POLICY.
func allAlgorithmArgs() []Arg {
	var out []Arg
	for _, a := range policyAlgorithms {
		out = append(out, Arg{Name: a.word, Type: "pure-token", Token: strings.ToUpper(a.word)})
	}
	return append(out, Arg{Name: "policy", Type: "pure-token", Token: "POLICY"})
}

// limitArgs documents a limit's key and op's parameters.
func limitArgs(op engine.Op) []Arg { return append([]Arg{argKey}, paramArgs(op)...) }

// decisionSpec builds the spec of an RL.* decision command: its name and
// parameters are the engine's op's.
func decisionSpec(id ID, op engine.Op, fast bool, summary string) *Spec {
	flags, cats, complexity := []string{"write", "denyoom", "fast"}, []string{"@write", "@ratelimit", "@fast"}, "O(1)"
	if !fast {
		flags, cats, complexity = flags[:2], []string{"@write", "@ratelimit", "@slow"}, "O(N) where N is the number of distinct milliseconds with grants in the window"
	}
	args := append(limitArgs(op), argCost, argPartial)
	if op.Spec().Flags&engine.FlagForce != 0 {
		args = append(args, argForce)
	}
	if op.Spec().Flags&engine.FlagGlobal != 0 {
		args = append(args, argGlobal)
	}
	return &Spec{
		ID: id, Name: op.Spec().Name, Arity: -(2 + requiredParams(op)), Flags: flags,
		FirstKey: 1, LastKey: 1, KeyStep: 1, Categories: cats,
		Group: "ratelimit", Since: "1.0.0", Complexity: complexity, Summary: summary,
		Args: args, Route: RouteKey, parse: decisionParser(op),
	}
}

// keyspaceSpec builds the spec of a command on one or more keys.
func keyspaceSpec(id ID, name string, arity int, op engine.Op, write bool, group, summary string) *Spec {
	flags, cats := []string{"readonly", "fast"}, []string{"@keyspace", "@read", "@fast"}
	if write {
		flags, cats = []string{"write"}, []string{"@keyspace", "@write", "@slow"}
	}
	last, args := 1, []Arg{argKey}
	if arity < 0 {
		last, args = -1, []Arg{argKeys}
	}
	return &Spec{
		ID: id, Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: last, KeyStep: 1,
		Categories: cats, Group: group, Since: "1.0.0", Complexity: "O(N) where N is the number of keys",
		Summary: summary, Args: args, Route: RouteKey, parse: keyParser(op),
	}
}

// limitSpec builds the spec of a ratelimit command on one key, first.
func limitSpec(id ID, name string, arity int, write bool, summary string, parse parser, args ...Arg) *Spec {
	flags, cats := []string{"readonly", "fast"}, []string{"@read", "@ratelimit", "@fast"}
	if write {
		flags, cats = []string{"write", "denyoom", "fast"}, []string{"@write", "@ratelimit", "@fast"}
	}
	return &Spec{
		ID: id, Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, KeyStep: 1,
		Categories: cats, Group: "ratelimit", Since: "1.1.0", Complexity: "O(1)",
		Summary: summary, Args: append([]Arg{argKey}, args...), Route: RouteKey, parse: parse,
	}
}

// stringSpec builds the spec of one of Redis's string commands.
func stringSpec(id ID, name string, arity int, flags []string, group, summary string, parse parser, args ...Arg) *Spec {
	cats := []string{"@" + group, "@write", "@fast"}
	if flags[0] == "readonly" {
		cats[1] = "@read"
	}
	return &Spec{
		ID: id, Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, KeyStep: 1,
		Categories: cats, Group: group, Since: "1.1.0", Complexity: "O(1)",
		Summary: summary, Args: append([]Arg{argKey}, args...), Route: RouteKey, parse: parse,
	}
}

var (
	writeFast   = []string{"write", "denyoom", "fast"}
	writeNoOOM  = []string{"write", "fast"}
	argValue    = Arg{Name: "value", Type: "string"}
	argSeconds  = Arg{Name: "seconds", Type: "integer"}
	argMillis   = Arg{Name: "milliseconds", Type: "integer"}
	argIncr     = Arg{Name: "increment", Type: "integer"}
	argDecr     = Arg{Name: "decrement", Type: "integer"}
	argExpireIf = Arg{Name: "condition", Type: "oneof", Optional: true, Args: []Arg{
		{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"},
		{Name: "gt", Type: "pure-token", Token: "GT"}, {Name: "lt", Type: "pure-token", Token: "LT"}}}
	argSetOptions = []Arg{
		{Name: "condition", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"}}},
		{Name: "get", Type: "pure-token", Token: "GET", Optional: true},
		{Name: "expiration", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "seconds", Type: "integer", Token: "EX"}, {Name: "milliseconds", Type: "integer", Token: "PX"},
			{Name: "unix-time-seconds", Type: "unix-time", Token: "EXAT"},
			{Name: "unix-time-milliseconds", Type: "unix-time", Token: "PXAT"},
			{Name: "keepttl", Type: "pure-token", Token: "KEEPTTL"}}},
	}
)

// serverSpec builds the spec of a command the server answers itself.
func serverSpec(id ID, name string, arity int, flags, cats []string, group, summary string, args ...Arg) *Spec {
	return &Spec{
		ID: id, Name: name, Arity: arity, Flags: flags, Categories: cats, Group: group,
		Since: "1.0.0", Complexity: "O(1)", Summary: summary, Args: args, Route: RouteServer,
	}
}

// sub builds a subcommand spec of parent. Its ACL categories are its own,
// as in Redis: a user's rules allow or deny each subcommand (CONFIG GET but
// not CONFIG SET).
func sub(parent, name string, arity int, flags, cats []string, summary string, args ...Arg) *Spec {
	return &Spec{
		Name: parent + "|" + name, Arity: arity, Flags: flags, Categories: cats, Group: "server",
		Since: "1.0.0", Complexity: "O(1)", Summary: summary, Args: args, Route: RouteServer,
	}
}

var (
	connFlags  = []string{"noscript", "loading", "stale", "fast", "no_auth"}
	connCats   = []string{"@connection", "@fast"}
	adminFlags = []string{"admin", "noscript", "loading", "stale"}
	// aclFlags are Redis's flags of the ACL subcommands.
	aclFlags      = []string{"noscript", "loading", "stale", "sentinel"}
	aclAdminFlags = []string{"admin", "noscript", "loading", "stale", "sentinel"}
	adminCats     = []string{"@admin", "@slow", "@dangerous"}
	infoFlags     = []string{"loading", "stale"}
	// INFO is read-only inspection: in @read, with the keys' readers, so that
	// a monitoring user needs no more than +@read. (Redis files it under
	// @dangerous; rlserver's INFO holds no secret.)
	infoCats = []string{"@read", "@slow"}
	// The categories of subcommands, as Redis 7 files its own.
	slowCats      = []string{"@slow"}
	connSubCats   = []string{"@slow", "@connection"}
	adminConnCats = []string{"@admin", "@slow", "@dangerous", "@connection"}
	// RL.POLICY GET and LIST inspect; SET and DEL change every client's
	// limits, so they are administration, outside @ratelimit: a caller
	// allowed its decisions (+@ratelimit) cannot loosen its own limits.
	policyReadCats  = []string{"@read", "@ratelimit", "@slow"}
	policyWriteCats = []string{"@write", "@admin", "@slow", "@dangerous"}
)

var table = append(append(append(append(append(append(append([]*Spec{}, baseTable...), shareSpecs...), reserveSpecs...), collectionSpecs...),
	scriptingSpecs...), operatorSpecs...), multiKeySpecs...)

// baseTable is the commands of the limiters and the server.
var baseTable = []*Spec{
	decisionSpec(IDSliding, engine.OpSliding, true,
		"Sliding-window counter: may this caller spend cost now? Replies [allowed, limit, remaining, retry_after_ms, reset_after_ms]."),
	decisionSpec(IDFixed, engine.OpFixed, true,
		"Fixed window aligned to the epoch: may this caller spend cost now?"),
	decisionSpec(IDLog, engine.OpLog, false,
		"Exact sliding log: may this caller spend cost now? Memory grows with the limit (at most 10000)."),
	decisionSpec(IDToken, engine.OpToken, true,
		"Token bucket that starts full and refills continuously: may this caller spend cost now?"),
	decisionSpec(IDLeaky, engine.OpLeaky, true,
		"Leaky bucket as a meter: may this caller pour cost into the bucket now?"),
	decisionSpec(IDGCRA, engine.OpGCRA, true,
		"GCRA with redis-cell's parameters (limit = burst + 1) in milliseconds: may this caller spend cost now?"),
	{
		ID: IDThrottle, Name: "cl.throttle", Arity: -5, Flags: []string{"write", "denyoom", "fast"},
		FirstKey: 1, LastKey: 1, KeyStep: 1, Categories: []string{"@write", "@ratelimit", "@fast"},
		Group: "ratelimit", Since: "1.0.0", Complexity: "O(1)",
		Summary: "redis-cell's GCRA command, reply for reply: [limited, limit, remaining, retry_after_s, reset_after_s].",
		Args:    append(limitArgs(engine.OpThrottle), Arg{Name: "quantity", Type: "integer", Optional: true}),
		Route:   RouteKey, parse: parseThrottle,
	},
	decisionSpec(IDShape, engine.OpShape, true,
		"Throttling: a leaky-bucket queue that admits while it has room and says how long to wait first (delay_ms); refuses only when full."),
	limitSpec(IDQuota, "rl.quota", -4, true,
		"Calendar quota: units per day, ISO week, month or year, reset when the period turns (UTC, or OFFSET minutes east of it).",
		decisionParser(engine.OpQuota), append(paramArgs(engine.OpQuota), argCost, argPartial, argForce)...),
	limitSpec(IDAcquire, "rl.acquire", 4, true,
		"Concurrency limit: takes a lease if fewer than limit are held; the reply's lease_id releases it, lease_ms expires it.",
		parseAcquire, Arg{Name: "limit", Type: "integer"}, Arg{Name: "lease_ms", Type: "integer"}),
	limitSpec(IDRelease, "rl.release", 3, true,
		"Releases a lease RL.ACQUIRE granted. Replies 1 if it was held, 0 if it had expired or was released.",
		parseRelease, Arg{Name: "lease_id", Type: "integer"}),
	limitSpec(IDCheck, "rl.check", -3, true,
		"Applies a policy defined with RL.POLICY SET to a key: the policy's algorithm and limits, the common reply.",
		parseCheck, Arg{Name: "policy", Type: "string"}, argCost, argPartial, argForce),
	{
		ID: IDAll, Name: "rl.all", Arity: -4, Flags: []string{"write", "denyoom", "movablekeys"},
		FirstKey: 2, LastKey: 2, KeyStep: 1, Categories: []string{"@write", "@ratelimit", "@fast"},
		Group: "ratelimit", Since: "1.1.0", Complexity: "O(N) where N is the number of limits",
		Summary: "Checks several limits as one, all or nothing: when one denies, nothing is consumed. Keys must share a hash slot.",
		Args: []Arg{{Name: "limit", Type: "block", Multiple: true, Args: []Arg{
			{Name: "algorithm", Type: "oneof", Args: allAlgorithmArgs()},
			argKey, {Name: "parameters", Type: "string", Multiple: true}}}, argCost, argForce},
		Route: RouteKey, SameSlot: true, parse: parseAll,
	},
	{
		ID: IDPolicy, Name: "rl.policy", Arity: -2, Categories: slowCats, Group: "ratelimit",
		Since: "1.1.0", Complexity: "O(1)", Summary: "Named limits kept on the server, replicated with the data.", Route: RouteServer,
		Sub: []*Spec{
			sub("rl.policy", "set", -5, []string{"write", "denyoom"}, policyWriteCats,
				"Defines or changes a policy: RL.POLICY SET name ALGORITHM parameters... [SHADOW | GLOBAL [STRICT|RELAXED]]. Takes effect at once for every client.",
				Arg{Name: "name", Type: "string"}, Arg{Name: "algorithm", Type: "string"},
				Arg{Name: "parameters", Type: "string", Multiple: true}, Arg{Name: "mode", Type: "oneof", Optional: true,
					Args: []Arg{{Name: "shadow", Type: "pure-token", Token: "SHADOW"}, argGlobal}}),
			sub("rl.policy", "get", 3, []string{"readonly"}, policyReadCats, "A policy's definition and counters (checks, denied, shadow_denied); nil if none.",
				Arg{Name: "name", Type: "string"}),
			sub("rl.policy", "list", 2, []string{"readonly"}, policyReadCats, "Every policy: its name and its definition."),
			sub("rl.policy", "del", 3, []string{"write"}, policyWriteCats, "Deletes a policy. Replies 1 if it existed.", Arg{Name: "name", Type: "string"}),
			sub("rl.policy", "help", 2, []string{"loading", "stale"}, policyReadCats, "Lists the RL.POLICY subcommands."),
		},
	},
	keyspaceSpec(IDInfoKey, "rl.info", 2, engine.OpInfo, false, "ratelimit",
		"Describes a limiter key: algorithm, parameters, state, remaining budget and TTL."),
	keyspaceSpec(IDReset, "rl.reset", 2, engine.OpDel, true, "ratelimit",
		"Resets a limiter key to its full budget (deletes it). Replies 1 if it existed."),
	keyspaceSpec(IDDel, "del", -2, engine.OpDel, true, "generic", "Deletes keys. Replies the number deleted."),
	keyspaceSpec(IDUnlink, "unlink", -2, engine.OpDel, true, "generic", "Deletes keys (same as DEL). Replies the number deleted."),
	keyspaceSpec(IDExists, "exists", -2, engine.OpExists, false, "generic", "Counts how many of the keys exist."),
	keyspaceSpec(IDType, "type", 2, engine.OpType, false, "generic", "Names the algorithm that owns a key, or none."),
	keyspaceSpec(IDPTTL, "pttl", 2, engine.OpPTTL, false, "generic",
		"Milliseconds until a key is back to its full budget and disappears; -2 if absent."),
	keyspaceSpec(IDTTL, "ttl", 2, engine.OpTTL, false, "generic",
		"Seconds (rounded) until a key is back to its full budget and disappears; -2 if absent."),
	stringSpec(IDGet, "get", 2, []string{"readonly", "fast"}, "string", "The value of a string key; nil if absent.", parseGet),
	stringSpec(IDSet, "set", -3, []string{"write", "denyoom"}, "string",
		"Sets a string key, as Redis's SET: NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL.",
		parseSet, append([]Arg{argValue}, argSetOptions...)...),
	stringSpec(IDSetNX, "setnx", 3, writeFast, "string", "Sets a string key if it is absent. Replies 1 if it was set.", parseSetNX, argValue),
	stringSpec(IDSetEX, "setex", 4, []string{"write", "denyoom"}, "string", "Sets a string key with an expiry in seconds.",
		setexParser("setex", 1000), argSeconds, argValue),
	stringSpec(IDPSetEX, "psetex", 4, []string{"write", "denyoom"}, "string", "Sets a string key with an expiry in milliseconds.",
		setexParser("psetex", 1), argMillis, argValue),
	stringSpec(IDGetSet, "getset", 3, writeFast, "string", "Sets a string key and replies its old value (SET key value GET).", parseGetSet, argValue),
	stringSpec(IDIncr, "incr", 2, writeFast, "string", "Adds 1 to an integer string key (0 if absent); keeps its expiry.", incrParser(1, 1)),
	stringSpec(IDIncrBy, "incrby", 3, writeFast, "string", "Adds the increment to an integer string key (0 if absent); keeps its expiry.", incrParser(0, 1), argIncr),
	stringSpec(IDDecr, "decr", 2, writeFast, "string", "Subtracts 1 from an integer string key (0 if absent); keeps its expiry.", incrParser(-1, 1)),
	stringSpec(IDDecrBy, "decrby", 3, writeFast, "string", "Subtracts the decrement from an integer string key (0 if absent); keeps its expiry.", incrParser(0, -1), argDecr),
	stringSpec(IDExpire, "expire", -3, writeNoOOM, "keyspace",
		"Sets a string key's expiry in seconds (NX, XX, GT, LT as Redis); 0 for a limiter key, whose expiry follows from its state.",
		expireParser("expire", 1000, engine.ExpiryRelative), argSeconds, argExpireIf),
	stringSpec(IDPExpire, "pexpire", -3, writeNoOOM, "keyspace",
		"Sets a string key's expiry in milliseconds (NX, XX, GT, LT as Redis); 0 for a limiter key.",
		expireParser("pexpire", 1, engine.ExpiryRelative), argMillis, argExpireIf),
	stringSpec(IDExpireAt, "expireat", -3, writeNoOOM, "keyspace",
		"Sets a string key's expiry to a Unix time in seconds; 0 for a limiter key.",
		expireParser("expireat", 1000, engine.ExpiryAbsolute), Arg{Name: "unix-time-seconds", Type: "unix-time"}, argExpireIf),
	stringSpec(IDPExpireAt, "pexpireat", -3, writeNoOOM, "keyspace",
		"Sets a string key's expiry to a Unix time in milliseconds; 0 for a limiter key.",
		expireParser("pexpireat", 1, engine.ExpiryAbsolute), Arg{Name: "unix-time-milliseconds", Type: "unix-time"}, argExpireIf),
	stringSpec(IDPersist, "persist", 2, writeNoOOM, "keyspace", "Removes a string key's expiry. Replies 1 if it had one.", parsePersist),
	{
		ID: IDDBSize, Name: "dbsize", Arity: 1, Flags: []string{"readonly", "fast"},
		Categories: []string{"@keyspace", "@read", "@fast"}, Group: "server", Since: "1.0.0",
		Complexity: "O(shards)", Summary: "Number of keys held, on every shard.", Route: RouteAll,
	},
	{
		ID: IDFlushAll, Name: "flushall", Arity: -1, Flags: []string{"write"},
		Categories: []string{"@keyspace", "@write", "@slow", "@dangerous"}, Group: "server", Since: "1.0.0",
		Complexity: "O(N) where N is the number of keys", Summary: "Removes every key: every limiter is back to its full budget.",
		Args:  []Arg{{Name: "flush-type", Type: "oneof", Optional: true, Args: []Arg{{Name: "async", Type: "pure-token", Token: "ASYNC"}, {Name: "sync", Type: "pure-token", Token: "SYNC"}}}},
		Route: RouteAll,
	},
	{
		ID: IDFlushDB, Name: "flushdb", Arity: -1, Flags: []string{"write"},
		Categories: []string{"@keyspace", "@write", "@slow", "@dangerous"}, Group: "server", Since: "1.0.0",
		Complexity: "O(N) where N is the number of keys", Summary: "Removes every key of the only database (same as FLUSHALL).",
		Args:  []Arg{{Name: "flush-type", Type: "oneof", Optional: true, Args: []Arg{{Name: "async", Type: "pure-token", Token: "ASYNC"}, {Name: "sync", Type: "pure-token", Token: "SYNC"}}}},
		Route: RouteAll,
	},
	{
		ID: IDScan, Name: "scan", Arity: -2, Flags: []string{"readonly"},
		Categories: []string{"@keyspace", "@read", "@slow"}, Group: "generic", Since: "1.0.0",
		Complexity: "O(1) for every call. O(N) for a complete iteration.",
		Summary:    "Iterates over the keys, as Redis's SCAN.",
		Args: []Arg{{Name: "cursor", Type: "integer"}, {Name: "pattern", Type: "pattern", Token: "MATCH", Optional: true},
			{Name: "count", Type: "integer", Token: "COUNT", Optional: true}, {Name: "type", Type: "string", Token: "TYPE", Optional: true}},
		Route: RouteAll,
	},

	serverSpec(IDPing, "ping", -1, []string{"fast"}, connCats, "connection", "Replies PONG, or the message.",
		Arg{Name: "message", Type: "string", Optional: true}),
	serverSpec(IDEcho, "echo", 2, []string{"fast"}, connCats, "connection", "Replies the message.",
		Arg{Name: "message", Type: "string"}),
	serverSpec(IDQuit, "quit", -1, connFlags, connCats, "connection", "Closes the connection."),
	serverSpec(IDResetConn, "reset", 1, connFlags, connCats, "connection",
		"Resets the connection: RESP2, no name, no transaction, not authenticated."),
	serverSpec(IDHello, "hello", -1, connFlags, connCats, "connection",
		"Handshake: chooses RESP2 or RESP3, optionally authenticates and names the connection.",
		Arg{Name: "arguments", Type: "block", Optional: true, Args: []Arg{
			{Name: "protover", Type: "integer"},
			{Name: "username-password", Type: "block", Token: "AUTH", Optional: true, Args: []Arg{{Name: "username", Type: "string"}, {Name: "password", Type: "string"}}},
			{Name: "clientname", Type: "string", Token: "SETNAME", Optional: true}}}),
	serverSpec(IDAuth, "auth", -2, connFlags, connCats, "connection", "Authenticates the connection.",
		Arg{Name: "username", Type: "string", Optional: true}, Arg{Name: "password", Type: "string"}),
	serverSpec(IDSelect, "select", 2, []string{"loading", "stale", "fast"}, connCats, "connection",
		"Selects database 0, the only one.", Arg{Name: "index", Type: "integer"}),
	{
		ID: IDClient, Name: "client", Arity: -2, Categories: []string{"@slow"}, Group: "connection", Since: "1.0.0",
		Complexity: "O(1)", Summary: "Connection management.", Route: RouteServer,
		Sub: []*Spec{
			sub("client", "setname", 3, connFlags, connSubCats, "Names the connection.", Arg{Name: "connection-name", Type: "string"}),
			sub("client", "getname", 2, connFlags, connSubCats, "Returns the connection's name."),
			sub("client", "setinfo", 4, connFlags, connSubCats, "Records the client library's name or version.",
				Arg{Name: "attr", Type: "oneof", Args: []Arg{{Name: "libname", Type: "string", Token: "LIB-NAME"}, {Name: "libver", Type: "string", Token: "LIB-VER"}}}),
			sub("client", "id", 2, connFlags, connSubCats, "Returns the connection's id."),
			sub("client", "info", 2, connFlags, connSubCats, "Describes this connection, as a CLIENT LIST line."),
			sub("client", "list", -2, []string{"admin", "noscript", "loading", "stale"}, adminConnCats, "Lists the connections.",
				Arg{Name: "client-type", Type: "string", Token: "TYPE", Optional: true}),
			sub("client", "tracking", -3, connFlags, connSubCats,
				"Client-side caching (RESP3): invalidation pushes for the keys the connection reads. OPTIN, OPTOUT and NOLOOP as Redis; no REDIRECT, BCAST or PREFIX.",
				Arg{Name: "status", Type: "oneof", Args: []Arg{{Name: "on", Type: "pure-token", Token: "ON"}, {Name: "off", Type: "pure-token", Token: "OFF"}}},
				Arg{Name: "client-id", Type: "integer", Token: "REDIRECT", Optional: true},
				Arg{Name: "prefix", Type: "string", Token: "PREFIX", Optional: true, Multiple: true},
				Arg{Name: "bcast", Type: "pure-token", Token: "BCAST", Optional: true},
				Arg{Name: "optin", Type: "pure-token", Token: "OPTIN", Optional: true},
				Arg{Name: "optout", Type: "pure-token", Token: "OPTOUT", Optional: true},
				Arg{Name: "noloop", Type: "pure-token", Token: "NOLOOP", Optional: true}),
			sub("client", "caching", 3, connFlags, connSubCats, "Tracks, or does not, the keys of the next command (OPTIN, OPTOUT modes).",
				Arg{Name: "mode", Type: "oneof", Args: []Arg{{Name: "yes", Type: "pure-token", Token: "YES"}, {Name: "no", Type: "pure-token", Token: "NO"}}}),
			sub("client", "getredir", 2, connFlags, connSubCats, "Where invalidations are redirected: 0 while tracking (never redirected), -1 while not."),
			sub("client", "trackinginfo", 2, connFlags, connSubCats, "The connection's tracking flags, redirect and prefixes."),
			sub("client", "no-evict", 3, connFlags, adminConnCats, "Accepted; rlserver never evicts clients.", Arg{Name: "enabled", Type: "string"}),
			sub("client", "no-touch", 3, connFlags, connSubCats, "Accepted; rlserver keys have no access time.", Arg{Name: "enabled", Type: "string"}),
			sub("client", "help", 2, connFlags, connSubCats, "Lists the CLIENT subcommands."),
		},
	},
	serverSpec(IDInfo, "info", -1, infoFlags, infoCats, "server",
		"Server information and statistics, in Redis's INFO format.",
		Arg{Name: "section", Type: "string", Optional: true, Multiple: true}),
	{
		ID: IDCommand, Name: "command", Arity: -1, Flags: []string{"loading", "stale"}, Categories: []string{"@slow", "@connection"},
		Group: "server", Since: "1.0.0", Complexity: "O(N) where N is the number of commands",
		Summary: "Describes the commands, as Redis 7 does.", Route: RouteServer,
		Sub: []*Spec{
			sub("command", "count", 2, infoFlags, connSubCats, "Number of commands."),
			sub("command", "info", -2, infoFlags, connSubCats, "Describes the named commands (all of them if none is named).",
				Arg{Name: "command-name", Type: "string", Optional: true, Multiple: true}),
			sub("command", "docs", -2, infoFlags, connSubCats, "Documents the named commands (all of them if none is named).",
				Arg{Name: "command-name", Type: "string", Optional: true, Multiple: true}),
			sub("command", "list", -2, infoFlags, connSubCats, "Names every command."),
			sub("command", "getkeys", -3, infoFlags, connSubCats, "Extracts the keys of a full command.",
				Arg{Name: "command", Type: "string"}, Arg{Name: "arg", Type: "string", Optional: true, Multiple: true}),
			sub("command", "help", 2, infoFlags, connSubCats, "Lists the COMMAND subcommands."),
		},
	},
	{
		ID: IDConfig, Name: "config", Arity: -2, Categories: []string{"@slow"}, Group: "server", Since: "1.0.0",
		Complexity: "O(N) where N is the number of parameters", Summary: "Reads the server's configuration.", Route: RouteServer,
		Sub: []*Spec{
			sub("config", "get", -3, adminFlags, adminCats, "Returns the parameters that match the patterns.",
				Arg{Name: "parameter", Type: "string", Multiple: true}),
			sub("config", "set", -4, adminFlags, adminCats, "Refused: rlserver's configuration is set at start-up.",
				Arg{Name: "parameter", Type: "string"}, Arg{Name: "value", Type: "string"}),
			sub("config", "resetstat", 2, adminFlags, adminCats, "Resets the statistics INFO reports."),
			sub("config", "help", 2, infoFlags, slowCats, "Lists the CONFIG subcommands."),
		},
	},
	serverSpec(IDTime, "time", 1, []string{"loading", "stale", "fast"}, []string{"@fast"}, "server",
		"The server's clock, the one decisions use: [unix seconds, microseconds]."),
	serverSpec(IDReadOnly, "readonly", 1, connFlags, connCats, "cluster", "Accepted for cluster clients; replies OK."),
	serverSpec(IDReadWrite, "readwrite", 1, connFlags, connCats, "cluster", "Accepted for cluster clients; replies OK."),
	{
		ID: IDCluster, Name: "cluster", Arity: -2, Categories: []string{"@slow"}, Group: "cluster", Since: "1.0.0",
		Complexity: "O(1)", Summary: "Cluster topology.", Route: RouteServer,
		Sub: []*Spec{
			sub("cluster", "keyslot", 3, []string{"stale"}, slowCats, "The hash slot of a key.", Arg{Name: "key", Type: "string"}),
			sub("cluster", "slots", 2, []string{"loading", "stale"}, slowCats, "The slot ranges and the nodes that serve them."),
			sub("cluster", "shards", 2, []string{"loading", "stale"}, slowCats, "The shards, their slots and nodes."),
			sub("cluster", "nodes", 2, []string{"loading", "stale"}, slowCats, "The nodes, in Redis Cluster's text format."),
			sub("cluster", "info", 2, []string{"loading", "stale"}, slowCats, "Cluster state and counters."),
			sub("cluster", "myid", 2, []string{"loading", "stale"}, slowCats, "This node's id."),
			sub("cluster", "moveshard", 5, adminFlags, adminCats, "Moves a shard's replica from a node to another, online.",
				Arg{Name: "shard", Type: "integer"}, Arg{Name: "from-node-id", Type: "string"}, Arg{Name: "to-node-id", Type: "string"}),
			sub("cluster", "rebalance", -2, adminFlags, adminCats, "Plans and moves replicas until every shard has three on distinct nodes, spread evenly; DRYRUN prints the plan, STATUS the rebalance's state.",
				Arg{Name: "mode", Type: "oneof", Optional: true, Args: []Arg{
					{Name: "dryrun", Type: "pure-token", Token: "DRYRUN"}, {Name: "status", Type: "pure-token", Token: "STATUS"}}}),
			sub("cluster", "forget", -3, adminFlags, adminCats, "Removes a node that holds no replica; FORCE first re-creates its replicas on the others.",
				Arg{Name: "node-id", Type: "string"}, Arg{Name: "force", Type: "pure-token", Token: "FORCE", Optional: true}),
			sub("cluster", "help", 2, []string{"loading", "stale"}, slowCats, "Lists the CLUSTER subcommands."),
		},
	},
	serverSpec(IDMulti, "multi", 1, []string{"noscript", "loading", "stale", "fast"}, []string{"@fast", "@transaction"},
		"transactions", "Starts a transaction; its commands must share one hash slot."),
	serverSpec(IDExec, "exec", 1, []string{"noscript", "loading", "stale"}, []string{"@slow", "@transaction"},
		"transactions", "Runs the queued commands as one atomic step."),
	serverSpec(IDDiscard, "discard", 1, []string{"noscript", "loading", "stale", "fast"}, []string{"@fast", "@transaction"},
		"transactions", "Drops the queued commands."),
	{
		ID: IDACL, Name: "acl", Arity: -2, Categories: slowCats, Group: "server", Since: "1.2.0",
		Complexity: "O(N) where N is the number of users", Summary: "Users and their permissions, read from --aclfile at start-up.", Route: RouteServer,
		Sub: []*Spec{
			sub("acl", "whoami", 2, aclFlags, slowCats, "The user this connection is authenticated as."),
			sub("acl", "users", 2, aclAdminFlags, adminCats, "Every user's name."),
			sub("acl", "list", 2, aclAdminFlags, adminCats, "Every user's rules, as the aclfile would say them (passwords as their SHA-256)."),
			sub("acl", "getuser", 3, aclAdminFlags, adminCats, "A user's flags, password hashes, commands and key patterns.",
				Arg{Name: "username", Type: "string"}),
			sub("acl", "cat", -2, aclFlags, slowCats, "The ACL categories, or the commands in one.",
				Arg{Name: "category", Type: "string", Optional: true}),
			sub("acl", "genpass", -2, aclFlags, slowCats, "A random password, 256 bits (or the bits given) as hex.",
				Arg{Name: "bits", Type: "integer", Optional: true}),
			sub("acl", "setuser", -3, aclAdminFlags, adminCats, "Refused: users are read from --aclfile at start-up; edit the file and restart.",
				Arg{Name: "username", Type: "string"}, Arg{Name: "rule", Type: "string", Optional: true, Multiple: true}),
			sub("acl", "deluser", -3, aclAdminFlags, adminCats, "Refused: users are read from --aclfile at start-up; edit the file and restart.",
				Arg{Name: "username", Type: "string", Multiple: true}),
			sub("acl", "load", 2, aclAdminFlags, adminCats, "Refused: users are read from --aclfile at start-up; edit the file and restart."),
			sub("acl", "save", 2, aclAdminFlags, adminCats, "Refused: users are read from --aclfile at start-up, never written."),
			sub("acl", "help", 2, aclFlags, slowCats, "Lists the ACL subcommands."),
		},
	},
	{
		ID: IDMemory, Name: "memory", Arity: -2, Categories: []string{"@slow"}, Group: "server", Since: "1.0.0",
		Complexity: "O(1)", Summary: "Memory introspection, as Redis's MEMORY.", Route: RouteServer,
		Sub: []*Spec{
			{
				Name: "memory|usage", Arity: -3, Flags: []string{"readonly"}, FirstKey: 2, LastKey: 2, KeyStep: 1,
				Categories: []string{"@read", "@slow"},
				Group:      "server", Since: "1.0.0", Complexity: "O(1)",
				Summary: "The bytes a key holds, as rlserver estimates them (its slot, index entry, key and log); nil if absent.",
				Args:    []Arg{argKey, {Name: "count", Type: "integer", Token: "SAMPLES", Optional: true}},
				Route:   RouteKey, parse: parseMemoryUsage,
			},
			sub("memory", "stats", 2, []string{"readonly"}, slowCats, "Memory figures: the Go heap, the keys and their estimated bytes."),
			sub("memory", "purge", 2, []string{}, slowCats, "Runs the garbage collector and returns free memory to the system; INFO's used_memory is then what is live."),
			sub("memory", "help", 2, []string{"loading", "stale"}, slowCats, "Lists the MEMORY subcommands."),
		},
	},
	{
		ID: IDDebug, Name: "debug", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"},
		Categories: adminCats, Group: "server", Since: "1.0.0", Complexity: "O(1)",
		Summary: "Testing aids, refused unless rlserver runs with --enable-debug-command.", Route: RouteServer,
		Sub: []*Spec{
			sub("debug", "clock", -3, adminFlags, adminCats,
				"DEBUG CLOCK SET <unix_ms> fixes the clock decisions use; DEBUG CLOCK ADVANCE <ms> moves it; DEBUG CLOCK GET reads it; DEBUG CLOCK REAL returns to the system clock; DEBUG CLOCK OFFSET <ms> makes this node's host clock that far off, as the clock check sees it.",
				Arg{Name: "action", Type: "string"}, Arg{Name: "ms", Type: "integer", Optional: true}),
			sub("debug", "disk", -3, adminFlags, adminCats,
				"DEBUG DISK FAIL [EIO|ENOSPC] fails every append to this node's Raft logs; DEBUG DISK SLOW <ms> delays each; DEBUG DISK OK stops both; DEBUG DISK GET says which are in force.",
				Arg{Name: "action", Type: "string"}, Arg{Name: "value", Type: "string", Optional: true}),
			sub("debug", "digest", 2, adminFlags, adminCats, "A SHA-256 of every live key and its state: replicas that agree have the same digest."),
			sub("debug", "digest-shards", 2, adminFlags, adminCats, "DEBUG DIGEST's digest of each shard, in shard order: which shard two nodes disagree on."),
			sub("debug", "help", 2, adminFlags, adminCats, "Lists the DEBUG subcommands."),
		},
	},
}
