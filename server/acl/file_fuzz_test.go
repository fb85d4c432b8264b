package acl

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds the aclfile parser anything: it must never panic, and
// a file it accepts must describe itself (ACL LIST) in lines it accepts
// again, to the same users.
func FuzzParse(f *testing.F) {
	f.Add("# roles\nuser default off\nuser app on #" + sha("app-pw") + " ~* +@ratelimit +@connection -@dangerous\n")
	f.Add("user tenant on >t ~tenant:* %R~shared:* +@ratelimit +@read\nuser open on nopass ~* +@all -@dangerous\n")
	f.Add("user a on >p <p #" + sha("x") + " !" + sha("x") + " ~a:* %R~b %W~c %RW~d resetkeys allkeys\n")
	f.Add("user a reset on nopass resetpass +@all -config +config|get -@dangerous +flushall allchannels &x\n")
	f.Add("# comment\n\nuser default off\nuser b on (~x +get)\n")
	f.Fuzz(func(t *testing.T, text string) {
		users, err := Parse(strings.NewReader(text), "f")
		if err != nil {
			return
		}
		var lines []string
		for _, n := range users.names {
			lines = append(lines, users.users[n].String())
		}
		again, err := Parse(strings.NewReader(strings.Join(lines, "\n")), "f")
		if err != nil {
			t.Fatalf("ACL LIST %q does not parse: %v", lines, err)
		}
		for i, n := range again.names {
			if got := again.users[n].String(); got != lines[i] {
				t.Fatalf("%s: %q describes itself as %q", n, lines[i], got)
			}
			if !slices.Equal(again.users[n].allowed, users.users[n].allowed) {
				t.Fatalf("%s: %q allows other commands than the file it describes", n, lines[i])
			}
		}
	})
}
