package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionLine says which rlserver this is: its version, the commit it was
// built from (with "+dirty" when the checkout had changes), and Go's
// version: "rlserver 0.1.0-dev (commit 4be9bbd, go1.26.8)".
func versionLine() string {
	return fmt.Sprintf("rlserver %s (commit %s, %s)", version, buildCommit(), runtime.Version())
}

// buildCommit is commit, or the revision go build recorded, or "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
