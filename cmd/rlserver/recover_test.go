package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/persistence"
)

// rlserver recover refuses bad command lines (exit 2) and what it cannot
// recover (exit 1) with a message that says why; the groups themselves are
// tested in cluster (RecoverGroup) and end to end in tests/.
func TestRecoverRefusals(t *testing.T) {
	node := t.TempDir()
	if _, err := persistence.Open(node, persistence.Identity{NodeID: "n1", Shards: 2, Members: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no data dir", []string{"--shard", "0"}, 2, "--data-dir DIR is required"},
		{"no group", []string{"--data-dir", node}, 2, "--shard N or --catalogue"},
		{"two groups", []string{"--data-dir", node, "--shard", "0", "--catalogue"}, 2, "--shard N or --catalogue"},
		{"a shard that is no number", []string{"--data-dir", node, "--shard", "x"}, 2, "a shard is a number from 0"},
		{"an argument", []string{"--data-dir", node, "--shard", "0", "extra"}, 2, `unexpected argument "extra"`},
		{"data dir missing", []string{"--data-dir", filepath.Join(empty, "gone"), "--shard", "0"}, 1, "no such file or directory"},
		{"not a data dir", []string{"--data-dir", empty, "--shard", "0"}, 1, "holds no rlserver data directory"},
		{"unknown shard", []string{"--data-dir", node, "--shard", "5"}, 1, "shard 5: no such group: the cluster's shards are 0 to 1"},
		{"shard not held", []string{"--data-dir", node, "--shard", "1"}, 1, "node n1 holds no replica of it"},
		{"no catalogue", []string{"--data-dir", node, "--catalogue"}, 1, "holds no catalogue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"recover"}, c.args...), &stdout, &stderr, func(string) (string, bool) { return "", false })
			if code != c.code || !strings.Contains(stderr.String(), c.want) || stdout.Len() > 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout.String(), stderr.String(), c.code, c.want)
			}
		})
	}
}

// --dry-run without a group surveys the groups the node holds: none here,
// which it says; the groups themselves are surveyed end to end in tests/.
func TestRecoverSurveyOfANodeWithoutGroups(t *testing.T) {
	node := t.TempDir()
	if _, err := persistence.Open(node, persistence.Identity{NodeID: "n1", Shards: 2, Members: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"recover", "--data-dir", node, "--dry-run"}, &stdout, &stderr, func(string) (string, bool) { return "", false })
	if code != 0 || !strings.Contains(stdout.String(), "node n1 ("+node+"): 0 groups; survivors n1") || stderr.Len() > 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
