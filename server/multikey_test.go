package server

import (
	"sort"
	"strings"
	"testing"
)

// TestMGetMSetKeys checks MGET over keys of several shards (nil for a key
// absent or of another kind, in RESP2 and RESP3), MSET's one slot, and
// KEYS over every shard.
func TestMGetMSetKeys(t *testing.T) {
	s := startServer(t, withShards(4))
	c := s.dial(t)
	c.run([]step{
		{cmd("SET", "a", "1"), "+OK\r\n"},
		{cmd("SET", "b", "two"), "+OK\r\n"},
		{cmd("HSET", "h", "f", "v"), intReply(1)},
		{cmd("MGET", "a", "b", "h", "none", "a"), arrayReply(bulkReply("1"), bulkReply("two"), "$-1\r\n", "$-1\r\n", bulkReply("1"))},
		{cmd("MSET", "{m}x", "1", "{m}y", "2", "{m}x", "3"), "+OK\r\n"},
		{cmd("MGET", "{m}x", "{m}y"), arrayReply(bulkReply("3"), bulkReply("2"))},
		{cmd("MSET", "a", "1", "b"), errReply("ERR wrong number of arguments for 'mset' command")},
		{cmd("MSET", "a", "1", "b", "2"), wireCrossSlot},
	})
	got := strings.Split(strings.TrimSpace(strings.ReplaceAll(c.do("KEYS", "*"), "\r\n", " ")), " ")
	var keys []string
	for i := 2; i < len(got); i += 2 {
		keys = append(keys, got[i])
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "a,b,h,{m}x,{m}y" || got[0] != "*5" {
		t.Fatalf("KEYS *: %q", got)
	}
	c.run([]step{
		{cmd("KEYS", "{m}[x]"), arrayReply(bulkReply("{m}x"))},
		{cmd("KEYS", "nomatch*"), "*0\r\n"},
	})
	c.do("HELLO", "3")
	c.run([]step{{cmd("MGET", "a", "none"), "*2\r\n$1\r\n1\r\n_\r\n"}})
}
