package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// TopKeys returns the n heaviest keys of the last minute over every shard,
// denied or allowed: read from this node's replicas, and through their
// leaders for the shards it holds none of. Each shard's heavy-hitter sketch
// counts its own keys, so the shards' lists merge by count. RL.TOP, INFO's
// topkeys section, the metrics and the status page read it.
func (s *Server) TopKeys(denied bool, n int) ([]engine.TopKey, error) {
	n = min(n, engine.MaxTopCount)
	outcome := int64(0)
	if denied {
		outcome = 1
	}
	cmd := engine.Command{Op: engine.OpTop, Args: [4]int64{outcome, int64(n)}}
	lists := make([][]engine.TopKey, 0, s.shards.Shards())
	for shard := range s.shards.Shards() {
		r, err := s.shards.Read(shard, cmd)
		if err == nil && r.Type == engine.ResError {
			err = r.Err
		}
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", shard, err)
		}
		lists = append(lists, engine.TopKeys(r))
	}
	return engine.MergeTop(lists, n), nil
}

// top is RL.TOP [DENIED|ALLOWED] [COUNT n]: an array of [key, decisions,
// error], the heaviest first.
func (c *conn) top(args [][]byte, out []byte) []byte {
	a, err := commands.ParseTop(args)
	if err != nil {
		return appendError(out, err)
	}
	keys, err := c.srv.TopKeys(a.Denied, a.Count)
	if err != nil {
		return appendError(out, err)
	}
	out = resp.AppendArray(out, len(keys))
	for _, k := range keys {
		out = resp.AppendArray(out, 3)
		out = resp.AppendBulkString(out, k.Key)
		out = resp.AppendInt(out, k.Count)
		out = resp.AppendInt(out, k.Error)
	}
	return out
}

// infoTopKeys is how many keys of each outcome INFO's topkeys section lists.
const infoTopKeys = 5

// writeTopKeys writes INFO's topkeys section: the heaviest keys of the last
// minute, denied then allowed, as top_denied_<rank>:key="...",
// decisions=<n>,error=<n>. Keys are quoted as Go strings, so no byte of a key
// can break the line.
func (s *Server) writeTopKeys(b *strings.Builder, _ *engine.Stats) {
	for _, denied := range []bool{true, false} {
		name := "top_allowed_"
		if denied {
			name = "top_denied_"
		}
		keys, err := s.TopKeys(denied, infoTopKeys)
		if err != nil {
			infoLine(b, name+"error", strconv.Quote(err.Error()))
			continue
		}
		for i, k := range keys {
			infoLine(b, name+strconv.Itoa(i), fmt.Sprintf("key=%s,decisions=%d,error=%d", strconv.Quote(k.Key), k.Count, k.Error))
		}
	}
}
