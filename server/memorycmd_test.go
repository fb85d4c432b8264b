package server

import (
	"strings"
	"testing"
)

func TestMemoryCommand(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.do("RL.SLIDING", "user:ada", "100", "60000")
	usage := c.do("MEMORY", "USAGE", "user:ada")
	if !strings.HasPrefix(usage, ":") || usage == ":0\r\n" {
		t.Fatalf("MEMORY USAGE of a key: %q", usage)
	}
	c.expect(usage, "MEMORY", "USAGE", "user:ada", "SAMPLES", "5")
	c.expect("$-1\r\n", "MEMORY", "USAGE", "nosuch")
	c.expect(errReply("ERR syntax error"), "MEMORY", "USAGE", "user:ada", "FOO")
	c.expect("+OK\r\n", "MEMORY", "PURGE")
	stats := parse(t, c.do("MEMORY", "STATS")).([]any)
	if len(stats) != 14 || stats[4] != "keys.count" || stats[5] != int64(1) {
		t.Fatalf("MEMORY STATS: %v", stats)
	}
	c.expect(errReply("ERR unknown subcommand 'NOPE'. Try MEMORY HELP."), "MEMORY", "NOPE")
}
