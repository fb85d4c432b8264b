package server

import (
	"testing"

	"github.com/rlserver/rlserver/commands"
)

// lookup answers as commands.Lookup whatever came before: a name in another
// case, another command, an unknown one, and a name whose bytes the client's
// buffer reuses once it is looked up (the remembered name is a copy).
func TestLookupRemembersOnlyWhatItMay(t *testing.T) {
	var c conn
	buf := []byte("RL.SLIDING")
	for _, step := range []struct {
		name []byte
		want string // "" for none
	}{
		{buf, "rl.sliding"},
		{[]byte("rl.sliding"), "rl.sliding"},
		{[]byte("RL.SLIDING"), "rl.sliding"},
		{[]byte("PING"), "ping"},
		{[]byte("NOSUCH"), ""},
		{[]byte("PING"), "ping"},
		{[]byte("PINGS"), ""},
		{[]byte("PIN"), ""},
	} {
		got := c.lookup(step.name)
		switch {
		case step.want == "" && got != nil:
			t.Errorf("%s: found %s", step.name, got.Name)
		case step.want != "" && (got == nil || got.Name != step.want):
			t.Errorf("%s: found %v, want %s", step.name, got, step.want)
		}
	}
	c.lookup(buf)
	copy(buf, "RL.FIXED\r\n") // the read buffer, reused for the next command
	if got := c.lookup([]byte("RL.SLIDING")); got == nil || got.Name != "rl.sliding" {
		t.Errorf("after the buffer's reuse: %v", got)
	}
	if got := c.lookup(buf[:8]); got == nil || got.Name != "rl.fixed" {
		t.Errorf("RL.FIXED in the reused buffer: %v", got)
	}
}

// BenchmarkLookup is a pipeline's command name looked up as the table has it
// (commands.Lookup: lowered and hashed) and as the client does (lookup: the
// last name remembered).
func BenchmarkLookup(b *testing.B) {
	name := []byte("RL.SLIDING")
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			if commands.Lookup(name) == nil {
				b.Fatal("not found")
			}
		}
	})
	b.Run("client", func(b *testing.B) {
		var c conn
		for b.Loop() {
			if c.lookup(name) == nil {
				b.Fatal("not found")
			}
		}
	})
}
