package server

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/commands"
)

// Every subcommand of the command table has an entry that answers it, and
// every entry is a subcommand's.
func TestEverySubcommandHasAnEntry(t *testing.T) {
	names := map[string]bool{}
	for _, s := range commands.All() {
		for _, sub := range s.Sub {
			names[sub.Name] = true
			if subcommandOf(sub).answer == nil {
				t.Errorf("%s has no entry in subcommandTable", sub.Name)
			}
		}
	}
	for name := range subcommandTable {
		if !names[name] {
			t.Errorf("subcommandTable's %s is no subcommand", name)
		}
	}
}

// Every command with subcommands reaches its table: its HELP lists them.
func TestEveryCommandWithSubcommandsAnswersHelp(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	for _, spec := range commands.All() {
		if len(spec.Sub) == 0 {
			continue
		}
		name := strings.ToUpper(spec.Name)
		got := c.do(name, "HELP")
		if !strings.HasPrefix(got, "*") || !strings.Contains(got, "+"+name+" <subcommand>") {
			t.Errorf("%s HELP: %.80q", name, got)
		}
	}
}
