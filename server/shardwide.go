package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
)

// dbsize is DBSIZE: the keys of every shard.
func (c *client) dbsize(out []byte) []byte {
	results, err := c.everyShard(engine.Command{Op: engine.OpDBSize})
	if err != nil {
		return appendError(out, err)
	}
	var n int64
	for _, r := range results {
		n += r.Int
	}
	return appendInt(out, n)
}

// flushAll is FLUSHALL and FLUSHDB: every limiter back to its full budget.
func (c *client) flushAll(args [][]byte, out []byte) []byte {
	if err := commands.ParseFlush(args); err != nil {
		return appendError(out, err)
	}
	if _, err := c.everyShard(engine.Command{Op: engine.OpFlush}); err != nil {
		return appendError(out, err)
	}
	return appendOK(out)
}

// scanShardBits is how many low bits of a SCAN cursor name the shard; the
// rest is the position within it.
const scanShardBits = 10

// scan is SCAN: one shard at a time, the cursor carrying the shard and the
// position within it.
func (c *client) scan(args [][]byte, out []byte) []byte {
	a, err := commands.ParseScan(args)
	if err != nil {
		return appendError(out, err)
	}
	shards := c.srv.shards.Shards()
	shard, pos := int(a.Cursor&(1<<scanShardBits-1)), int64(a.Cursor>>scanShardBits)
	if shard >= shards || pos < 0 {
		return appendError(out, errors.New("ERR invalid cursor"))
	}
	kind := a.Kind
	if a.UnknownType {
		kind = engine.Kind(255) // matches no key
	}
	b := &c.batch
	b.reqs[shard].Cmds = append(b.reqs[shard].Cmds[:0], engine.Command{Op: engine.OpScan, Args: [4]int64{pos, a.Count, int64(kind)}})
	b.used = append(b.used, shard)
	b.submit(c.srv.shards)
	r, reqErr := b.reqs[shard].Results[0], b.reqs[shard].Err
	b.reset()
	if reqErr != nil {
		return appendError(out, reqErr)
	}
	next := uint64(0)
	switch {
	case r.Cursor != 0:
		next = r.Cursor<<scanShardBits | uint64(shard)
	case shard+1 < shards:
		next = uint64(shard + 1)
	}
	keys := r.Keys[:0]
	for _, k := range r.Keys {
		if a.Match == nil || commands.Match(a.Match, []byte(k), false) {
			keys = append(keys, k)
		}
	}
	out = appendArray(out, 2)
	out = appendBulkString(out, fmt.Sprint(next))
	out = appendArray(out, len(keys))
	for _, k := range keys {
		out = appendBulkString(out, k)
	}
	return out
}

var errDebugDisabled = errors.New("ERR DEBUG command not allowed. Start rlserver with --enable-debug-command to enable it.")

// debugCommand is DEBUG CLOCK and DEBUG DIGEST, for tests and operators.
func (c *client) debugCommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	if c.srv.debug == nil {
		return appendError(out, errDebugDisabled)
	}
	sub, err := subcommand(spec, args)
	if err != nil {
		return appendError(out, err)
	}
	switch sub.Name {
	case "debug|clock":
		return c.debugClock(args, out)
	case "debug|digest":
		results, err := c.everyShard(engine.Command{Op: engine.OpDigest})
		if err != nil {
			return appendError(out, err)
		}
		h := sha256.New()
		for _, r := range results {
			h.Write([]byte(r.Text))
		}
		return appendBulkString(out, hex.EncodeToString(h.Sum(nil)))
	}
	return appendHelp(out, spec)
}

var errClockUsage = errors.New("ERR DEBUG CLOCK SET <unix_ms> | ADVANCE <ms> | GET | REAL")

// maxClock is the latest instant DEBUG CLOCK accepts (2100-01-01): CL.THROTTLE
// counts in nanoseconds, which must fit in 64 bits with a bucket's depth.
const maxClock = 4_102_444_800_000

// debugClock is DEBUG CLOCK SET|ADVANCE|GET|REAL. Every shard adopts the new
// time at once, even an earlier one, so a test can replay a scenario.
func (c *client) debugClock(args [][]byte, out []byte) []byte {
	clock := c.srv.debug
	action := args[2]
	switch {
	case commands.EqualFold(action, "get") && len(args) == 3:
		return appendInt(out, clock.Now())
	case commands.EqualFold(action, "real") && len(args) == 3:
		clock.Real()
	case (commands.EqualFold(action, "set") || commands.EqualFold(action, "advance")) && len(args) == 4:
		ms, ok := commands.ParseInt(args[3])
		if !ok {
			return appendError(out, commands.ErrNotInteger)
		}
		advance := commands.EqualFold(action, "advance")
		target := ms
		if advance {
			target = clock.Now() + ms
		}
		if target < 0 || target > maxClock {
			return appendError(out, fmt.Errorf("ERR the clock must stay between 0 and %d (2100-01-01)", int64(maxClock)))
		}
		if advance {
			clock.Advance(ms) // a running clock keeps running
		} else {
			clock.Set(target)
		}
	default:
		return appendError(out, errClockUsage)
	}
	now := clock.Now()
	if _, err := c.everyShard(engine.Command{Op: engine.OpSetClock, Args: [4]int64{now}}); err != nil {
		return appendError(out, err)
	}
	return appendInt(out, now)
}

var errClusterDisabled = errors.New("ERR This instance has cluster support disabled")

// clusterCommand is CLUSTER on a node without cluster support: KEYSLOT and
// HELP work, the rest answer as Redis does with cluster support disabled.
func (c *client) clusterCommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	sub, err := subcommand(spec, args)
	if err != nil {
		return appendError(out, err)
	}
	switch sub.Name {
	case "cluster|keyslot":
		return appendInt(out, int64(cluster.Slot(args[2])))
	case "cluster|help":
		return appendHelp(out, spec)
	}
	return appendError(out, errClusterDisabled)
}
