package server

import (
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// keysChunk is how many records one read of a shard walks for KEYS: the
// shard answers other requests between two reads, so a large keyspace
// delays them by one chunk at a time, not by the whole walk.
const keysChunk = 1 << 14

// keys is KEYS: every live key of the shards this connection covers (a
// cluster client's node: the shards it leads, as Redis Cluster's KEYS
// answers a node's own keys) that matches the pattern. Each shard is walked
// as SCAN walks it, so a key held throughout is listed exactly once.
func (c *conn) keys(args [][]byte, out []byte) []byte {
	pattern := args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	var keys []string
	for shard := range c.srv.shards.Shards() {
		if !c.covers(shard) {
			continue
		}
		cmd := engine.Command{Op: engine.OpScan, Args: [4]int64{0, keysChunk, 0}}
		for {
			r, err := c.srv.shards.Read(shard, cmd)
			if err != nil {
				return appendError(out, err)
			}
			for _, k := range r.Keys {
				if all || commands.Match(pattern, []byte(k), false) {
					keys = append(keys, k)
				}
			}
			if r.Cursor == 0 {
				break
			}
			cmd.Args[0] = int64(r.Cursor)
		}
	}
	return resp.AppendBulkStrings(out, keys)
}
