package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// countingLeaver counts the times it is asked to leave.
type countingLeaver struct{ left int }

func (l *countingLeaver) Leave(context.Context) error { l.left++; return nil }

// A node leaves at SIGTERM only when the desired number of nodes is above
// zero and not above its ordinal: not when it cannot be read, nor when it
// is 0 (a StatefulSet scaled to zero stops every pod, and the cluster must
// come back whole), nor when the file holds a negative number.
func TestLeaveIfBeyond(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		desired string // the file's content; "" for no file
		node    string
		leaves  bool
	}{
		{"3\n", "rl-2", false},
		{"3\n", "rl-3", true},
		{"2", "rl-2", true},
		{"5", "rl-4", false},
		{"0\n", "rl-2", false},
		{"0\n", "rl-0", false},
		{"-1\n", "rl-2", false},
		{"three\n", "rl-2", false},
		{"", "rl-2", false},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "nodes")
		if tc.desired != "" {
			if err := os.WriteFile(path, []byte(tc.desired), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var l countingLeaver
		leaveIfBeyond(fleet{desiredNodesFile: path, leaveTimeout: time.Second}, tc.node, &l, log)
		if got := l.left == 1; got != tc.leaves {
			t.Errorf("desired %q, node %s: left %v, want %v", tc.desired, tc.node, got, tc.leaves)
		}
	}
}
