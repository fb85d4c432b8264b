package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// covers reports whether DBSIZE, SCAN and FLUSHALL on this connection cover
// shard. A cluster client sends them to every master and adds up the
// answers, as Redis Cluster's tools do, so for it a node covers the shards it
// leads; any other connection sees every shard (this node's replicas: up to
// three nodes, every node holds every shard).
func (c *conn) covers(shard int) bool {
	if cl := c.srv.cfg.Cluster; cl != nil && c.clusterAware {
		_, local, _ := cl.Leader(shard)
		return local
	}
	return true
}

// dbsize is DBSIZE: the keys of the shards this connection covers, counted
// on this node's replicas.
func (c *conn) dbsize(out []byte) []byte {
	var n int64
	for shard := range c.srv.shards.Shards() {
		if !c.covers(shard) {
			continue
		}
		r, err := c.srv.shards.Read(shard, engine.Command{Op: engine.OpDBSize})
		if err != nil {
			return appendError(out, err)
		}
		n += r.Int
	}
	return resp.AppendInt(out, n)
}

// flushAll is FLUSHALL and FLUSHDB: every limiter back to its full budget.
func (c *conn) flushAll(args [][]byte, out []byte) []byte {
	if err := commands.ParseFlush(args); err != nil {
		return appendError(out, err)
	}
	if _, err := c.everyShard(engine.Command{Op: engine.OpFlush}, c.covers); err != nil {
		return appendError(out, err)
	}
	return resp.AppendOK(out)
}

// scanShardBits is how many low bits of a SCAN cursor name the shard; the
// rest is the position within it. cluster.MaxShards bounds the shards to fit.
const scanShardBits = cluster.ShardBits

// scan is SCAN: one shard at a time, the cursor carrying the shard and the
// position within it.
func (c *conn) scan(args [][]byte, out []byte) []byte {
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
	cmd := engine.Command{Op: engine.OpScan, Args: [4]int64{pos, a.Count, int64(kind)}}
	// Skip the shards this connection does not cover.
	for shard < shards && !c.covers(shard) {
		shard, cmd.Args[0] = shard+1, 0
	}
	var r engine.Result
	if shard < shards {
		r, err = c.srv.shards.Read(shard, cmd)
	} else {
		shard = shards - 1 // nothing left: answer an empty last page
	}
	if err != nil {
		return appendError(out, err)
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
	out = resp.AppendArray(out, 2)
	out = resp.AppendBulkString(out, fmt.Sprint(next))
	return resp.AppendBulkStrings(out, keys)
}

var errDebugDisabled = errors.New("ERR DEBUG command not allowed. Start rlserver with --enable-debug-command to enable it.")

// debugDigest is DEBUG DIGEST: a SHA-256 over the digests of this node's
// replicas, each taken between two batches (a shard the node holds no
// replica of counts as its leader holds it). Replicas that applied the same
// log agree; compare nodes once writes have stopped and every replica has
// caught up. DEBUG is refused before its subcommand is looked at, unless
// enabled (dispatch.go).
func (c *conn) debugDigest(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	digests, err := c.shardDigests()
	if err != nil {
		return appendError(out, err)
	}
	h := sha256.New()
	for shard, d := range digests {
		fmt.Fprintf(h, "%d:%s;", shard, d)
	}
	return resp.AppendBulkString(out, hex.EncodeToString(h.Sum(nil)))
}

// debugDigestShards is DEBUG DIGEST-SHARDS: each shard's digest, as DEBUG
// DIGEST reads them: when two nodes' digests differ, which shard they
// disagree on.
func (c *conn) debugDigestShards(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	digests, err := c.shardDigests()
	if err != nil {
		return appendError(out, err)
	}
	return resp.AppendBulkStrings(out, digests)
}

// shardDigests is each shard's digest, in shard order.
func (c *conn) shardDigests() ([]string, error) {
	digests := make([]string, c.srv.shards.Shards())
	for shard := range digests {
		r, err := c.srv.shards.Read(shard, engine.Command{Op: engine.OpDigest})
		if err != nil {
			return nil, err
		}
		digests[shard] = r.Text
	}
	return digests, nil
}

var errClockUsage = errors.New("ERR DEBUG CLOCK SET <unix_ms> | ADVANCE <ms> | GET | REAL | OFFSET <ms>")

// maxClockOffset bounds DEBUG CLOCK OFFSET: a day either way.
const maxClockOffset = 24 * 3600 * 1000

// debugClock is DEBUG CLOCK SET|ADVANCE|GET|REAL|OFFSET. After SET, ADVANCE
// and REAL every shard adopts the new time at once, even an earlier one,
// so a test can replay a scenario. OFFSET makes this node's host clock
// wrong instead, as an unsynchronised host's is: the shards are left as
// they are, and the node's clock check sees it (cluster/clockcheck.go).
func (c *conn) debugClock(_ *commands.Spec, args [][]byte, out []byte) []byte {
	clock := c.srv.cfg.Debug
	action := args[2]
	switch {
	case commands.EqualFold(action, "get") && len(args) == 3:
		return resp.AppendInt(out, clock.Now())
	case commands.EqualFold(action, "offset") && len(args) == 4:
		ms, ok := commands.ParseInt(args[3])
		if !ok {
			return appendError(out, commands.ErrNotInteger)
		}
		if ms < -maxClockOffset || ms > maxClockOffset {
			return appendError(out, fmt.Errorf("ERR the offset must be within a day either way (%d ms)", maxClockOffset))
		}
		clock.SetOffset(ms)
		return resp.AppendInt(out, clock.Now())
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
			target = clock.Test() + ms
		}
		if target < 0 || target > engine.MaxTime {
			return appendError(out, fmt.Errorf("ERR the clock must stay between 0 and %d (2100-01-01)", int64(engine.MaxTime)))
		}
		if advance {
			clock.Advance(ms) // a running clock keeps running
		} else {
			clock.Set(target)
		}
	default:
		return appendError(out, errClockUsage)
	}
	// The shards adopt the test's time: a host's offset is its error,
	// which it must not spread to them.
	if _, err := c.everyShard(engine.Command{Op: engine.OpSetClock, Args: [4]int64{clock.Test()}}); err != nil {
		return appendError(out, err)
	}
	return resp.AppendInt(out, clock.Now())
}
