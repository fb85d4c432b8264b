package main

import (
	"bytes"
	"strings"
	"testing"
)

// rlserver version and --version say which build this is: the version,
// the commit it was built from, and Go's version.
func TestVersionNamesTheBuild(t *testing.T) {
	old := commit
	defer func() { commit = old }()
	commit = "4be9bbd"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		if code := run(args, &out, &out, func(string) (string, bool) { return "", false }); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, out.String())
		}
		line := strings.TrimSpace(out.String())
		if !strings.HasPrefix(line, "rlserver "+version+" (commit 4be9bbd, go1.") {
			t.Errorf("%v: %q, want the version, the commit and Go's version", args, line)
		}
	}
}
