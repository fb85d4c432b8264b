package server

import (
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/internal/poll"
)

func TestMaxMemoryRefusesNewKeysAndKeepsLimits(t *testing.T) {
	s := startServer(t, withShards(1), withConfig(func(c *Config) { c.MaxMemory = MemoryLimit{Bytes: 4096} }))
	c := s.dial(t)
	poll.Until(t, ioTimeout, "the limit to reach the shard", func() (bool, error) { return s.shards.Stats(0).MemoryLimit == 4096, nil })
	c.expect(arrayReply(bulkReply("maxmemory"), bulkReply("4096")), "CONFIG", "GET", "maxmemory")
	c.expect(decision2(1, 5, 4, 0, 100_000), "RL.SLIDING", "user:ada", "5", "60000")
	oom := 0
	for i := range 200 {
		if r := c.do("RL.SLIDING", fmt.Sprint("flood:", i), "5", "60000"); r == errReply("OOM command not allowed when used memory > 'maxmemory'.") {
			oom++
		}
	}
	if oom == 0 || oom == 200 {
		t.Fatalf("%d of 200 new keys refused, want some admitted and the rest refused", oom)
	}
	c.expect(decision2(1, 5, 3, 0, 100_000), "RL.SLIDING", "user:ada", "5", "60000")
	info := parse(t, c.do("INFO", "stats")).(string)
	if !contains(info, fmt.Sprintf("rl_rejected_oom:%d\r\n", oom)) {
		t.Fatalf("INFO stats:\n%s", info)
	}
	// volatile-ttl makes room instead, at the price of the keys nearest
	// to their reset.
	c.expect("+OK\r\n", "CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
	c.expect(decision2(1, 5, 4, 0, 100_000), "RL.SLIDING", "newcomer", "5", "60000")
	if info := parse(t, c.do("INFO", "stats")).(string); !contains(info, "evicted_keys:1\r\n") {
		t.Fatalf("INFO stats:\n%s", info)
	}
	c.expect(errReply(`ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - unknown maxmemory-policy "allkeys-lru": use noeviction or volatile-ttl`),
		"CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	c.expect("+OK\r\n", "CONFIG", "SET", "maxmemory", "0")
	c.expect(decision2(1, 5, 4, 0, 100_000), "RL.SLIDING", "flood:199", "5", "60000")
}

func TestParseMemorySize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1k": 1000, "1kb": 1024, "100MB": 100 << 20, "2g": 2e9, "2gb": 2 << 30} {
		if got, err := ParseMemorySize(in); err != nil || got != want {
			t.Errorf("ParseMemorySize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1tb", "lots", "99999999999gb"} {
		if _, err := ParseMemorySize(bad); err == nil {
			t.Errorf("ParseMemorySize(%q) accepted", bad)
		}
	}
}
