package commands

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestCommandsDocumented keeps docs/commands.md complete: every command and
// subcommand of the table must have a heading of its own there, named as
// users type it ("### RL.SLIDING", "#### CLIENT SETNAME").
func TestCommandsDocumented(t *testing.T) {
	f, err := os.Open("../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	headings := map[string]bool{}
	sc := bufio.NewScanner(f)
	inCode := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		headings[strings.Join(strings.Fields(strings.ReplaceAll(title, "`", "")), " ")] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	for _, name := range documentedNames() {
		if !headings[name] {
			t.Errorf("docs/commands.md has no heading %q", name)
		}
	}
}

// documentedNames lists every command of All() and every subcommand, upper
// case, subcommands as "PARENT SUB".
func documentedNames() []string {
	var names []string
	for _, s := range All() {
		names = append(names, strings.ToUpper(s.Name))
		for _, sub := range s.Sub {
			names = append(names, strings.ToUpper(strings.ReplaceAll(sub.Name, "|", " ")))
		}
	}
	return names
}

func TestDocumentedNames(t *testing.T) {
	names := documentedNames()
	want := map[string]bool{"RL.SLIDING": false, "CL.THROTTLE": false, "CLIENT SETNAME": false, "DEBUG CLOCK": false}
	for _, n := range names {
		if _, ok := want[n]; ok {
			want[n] = true
		}
	}
	for n, seen := range want {
		if !seen {
			t.Errorf("documentedNames misses %q", n)
		}
	}
}
