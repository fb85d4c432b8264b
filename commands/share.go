package commands

import "github.com/rlserver/rlserver/engine"

// The commands of budget leases: RL.SHARE asks for a share of a limit,
// RL.UNSHARE gives it back (docs/commands.md#rlshare).

// shareSpecs are RL.SHARE and RL.UNSHARE.
var shareSpecs = []*Spec{
	{
		ID: IDShare, Name: "rl.share", Arity: -5, Flags: []string{"write", "denyoom"},
		FirstKey: 1, LastKey: 1, KeyStep: 1, Categories: []string{"@write", "@ratelimit", "@slow"},
		Group: "ratelimit", Since: "1.3.0", Complexity: "O(N log N) where N is the number of the key's holders",
		Summary: "Budget lease: grants the holder a share of limit units per window_ms, to spend locally until ttl_ms. " +
			"Replies [rate, burst, ttl_ms, seq, fair_share, holders].",
		Args:  append(append(limitArgs(engine.OpShare), Arg{Name: "holder", Type: "string"}), shareOptionArgs()...),
		Route: RouteKey, parse: parseShare,
	},
	{
		ID: IDUnshare, Name: "rl.unshare", Arity: 3, Flags: []string{"write"},
		FirstKey: 1, LastKey: 1, KeyStep: 1, Categories: []string{"@write", "@ratelimit", "@slow"},
		Group: "ratelimit", Since: "1.3.0", Complexity: "O(N) where N is the number of the key's holders",
		Summary: "Gives back every share RL.SHARE granted the holder, at once. Replies 1 if it held one, 0 if not.",
		Args:    []Arg{argKey, {Name: "holder", Type: "string"}},
		Route:   RouteKey, parse: parseUnshare,
	},
}

// shareOptionArgs documents RL.SHARE's options.
func shareOptionArgs() []Arg {
	var out []Arg
	for i := range engine.ShareOptions {
		p := &engine.ShareOptions[i]
		out = append(out, Arg{Name: p.Name, Type: "integer", Token: p.Keyword, Optional: true})
	}
	return out
}

// parseShare parses "RL.SHARE key limit window_ms holder [DEMAND units]
// [TTL ms] [BURST ms] [ACK seq]", the options in any order, each at most
// once.
func parseShare(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	params := engine.OpShare.Spec().Params
	q := engine.ShareRequest{Holder: args[4], Demand: engine.UnknownDemand, TTL: engine.DefaultShareTTL}
	var err error
	if q.Limit, err = paramValue(args[2], &params[0]); err != nil {
		return dst, err
	}
	if q.Window, err = paramValue(args[3], &params[1]); err != nil {
		return dst, err
	}
	if err := engine.CheckHolder(q.Holder); err != nil {
		return dst, err
	}
	q.Burst = min(engine.DefaultShareBurst, q.Window)
	fields := []*int64{&q.Demand, &q.TTL, &q.Burst, &q.Ack} // in engine.ShareOptions' order
	var seen [4]bool
	for rest := args[5:]; len(rest) > 0; rest = rest[2:] {
		k := shareOption(rest[0])
		if k < 0 || seen[k] || len(rest) < 2 {
			return dst, ErrSyntax
		}
		seen[k] = true
		if *fields[k], err = paramArg(rest[1], &engine.ShareOptions[k]); err != nil {
			return dst, err
		}
	}
	c := q.Command(args[1])
	if err := c.Check(); err != nil {
		return dst, err
	}
	return append(dst, c), nil
}

// shareOption is the index in engine.ShareOptions of the option named by
// word, -1 if none is.
func shareOption(word []byte) int {
	for k := range engine.ShareOptions {
		if equalWord(word, engine.ShareOptions[k].Keyword) {
			return k
		}
	}
	return -1
}

// parseUnshare parses "RL.UNSHARE key holder".
func parseUnshare(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	if err := engine.CheckHolder(args[2]); err != nil {
		return dst, err
	}
	return append(dst, engine.Command{Op: engine.OpUnshare, Key: args[1], Value: args[2]}), nil
}
