package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// --version prints "rlserver <version> (commit <commit>, <go version>)" on
// stdout and exits 0 without starting anything; --help exits 0 with the
// flags on stderr.
func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	isVersion := regexp.MustCompile(`^rlserver \S+ \(commit \S+, go\S+\)\n$`).MatchString
	_, stderr, code := runBinary(t, "--help")
	if code != 0 || !strings.Contains(stderr, "-requirepass") || !strings.Contains(stderr, "-in-memory") {
		t.Errorf("--help: exit %d, stderr %q; want exit 0 and the flags", code, stderr)
	}
	stdout, stderr, code := runBinary(t, "--in-memory", "--version")
	if code != 0 || !isVersion(stdout) || stderr != "" {
		t.Errorf("--in-memory --version: exit %d, stdout %q, stderr %q; want exit 0 and \"rlserver <version> (commit <commit>, <go>)\"", code, stdout, stderr)
	}
	stdout, stderr, code = runBinary(t, "--version")
	if code != 0 || !isVersion(stdout) || stderr != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want exit 0 and \"rlserver <version> (commit <commit>, <go>)\"", code, stdout, stderr)
	}
}

// A setting out of range, a malformed value, an unknown flag or a stray
// argument stops rlserver at once with exit status 2 and a message that
// names the setting.
func TestInvalidFlagsExit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--shards", "0"}, "--shards 0: must be from 1 to 1024"},
		{[]string{"--shards", "1025"}, "--shards 1025: must be from 1 to 1024"},
		{[]string{"--port", "70000"}, "--port 70000: must be from 0 to 65535"},
		{[]string{"--port", "-1"}, "--port -1: must be from 0 to 65535"},
		{[]string{"--maxclients", "0"}, "--maxclients 0: must be at least 1"},
		{[]string{"--max-bulk-len", "0"}, "--max-bulk-len 0: must be from 1 to 1073741824 (1 GiB)"},
		{[]string{"--max-bulk-len", "1073741825"}, "--max-bulk-len 1073741825: must be from 1 to 1073741824 (1 GiB)"},
		{[]string{"--max-args", "0"}, "--max-args 0: must be from 1 to 1048576"},
		{[]string{"--max-request-len", "15"}, "--max-request-len 15: must be from 16 to 4294967296 (4 GiB)"},
		{[]string{"--max-key-len", "0"}, "--max-key-len 0: must be from 1 to 1048576"},
		{[]string{"--cluster", "n1@127.0.0.1:6381"}, "--cluster needs durable state: drop --in-memory"},
		{[]string{"--raft-journal"}, "--raft-journal needs durable state: drop --in-memory"},
		{[]string{"--shards", "four"}, `invalid value "four" for flag -shards`},
		{[]string{"--port", "99999999999999999999"}, `invalid value "99999999999999999999" for flag -port`},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"serve"}, `unexpected argument "serve"`},
		{[]string{"--data-dir", "/nonexistent/rl"}, "--in-memory and --data-dir exclude each other"},
		{[]string{"--raft-heartbeat", "1ms"}, "--raft-heartbeat 1ms: must be from 10ms to 1m"},
		{[]string{"--raft-snapshot-interval", "2h"}, "--raft-snapshot-interval 2h0m0s: must be from 10ms to 1h"},
		{[]string{"--raft-snapshot-log-percentage", "10001"}, "--raft-snapshot-log-percentage 10001: must be from 0 to 10000"},
		{[]string{"--raft-snapshot-log-percentage", "-1"}, `invalid value "-1" for flag -raft-snapshot-log-percentage`},
		{[]string{"--node-id", ""}, "--node-id: must not be empty"},
	}
	for _, tc := range cases {
		args := append([]string{"--in-memory", "--port", "0"}, tc.args...)
		_, stderr, code := runBinary(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("rlserver %v: exit %d, stderr:\n%s\nwant exit 2 and %q", args, code, stderr, tc.want)
		}
		if strings.Contains(stderr, "rlserver ready") {
			t.Errorf("rlserver %v started serving", args)
		}
	}
}

// Without --in-memory, rlserver keeps its state durably in --data-dir
// (rlserver-data in the working directory by default): after a restart the
// budget already spent is still spent, and the shard count the directory was
// made with cannot change.
func TestDurableStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--port", "0", "--bind", "127.0.0.1"}
	first := launch(t, dir, args...)
	if log := first.Log(); !strings.Contains(log, `mode="durable single node (rlserver-data)"`) {
		t.Errorf("the ready line does not name the durable mode:\n%s", log)
	}
	// One token an hour: nothing refills while the test runs.
	const cmd = "RL.TOKEN durable 10 1 3600000"
	expectDecision(t, first.Client(t, 3), cmd+" COST 3", allow(10, 7, 3*3600000))
	if code := first.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, first.Log())
	}
	if _, err := os.Stat(filepath.Join(dir, "rlserver-data")); err != nil {
		t.Fatalf("no data directory in the working directory: %v", err)
	}

	second := launch(t, dir, args...)
	if d := decide(t, second.Client(t, 3), cmd+" COST 0"); !d.Allowed || d.Remaining != 7 {
		t.Errorf("after a restart %s COST 0 = %v, want the 7 tokens left", cmd, d)
	}
	if code := second.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, second.Log())
	}

	_, stderr, code := runBinaryIn(t, dir, append(args, "--shards", "8")...)
	if code != 1 || !strings.Contains(stderr, "not --shards 8") {
		t.Errorf("--shards 8 on a 4-shard data directory: exit %d, stderr %q; want exit 1 naming --shards", code, stderr)
	}
}

// --in-memory writes no files at all.
func TestInMemoryWritesNoFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := launch(t, dir, join([]string{"--in-memory"}, baseArgs)...)
	decide(t, srv.Client(t, 3), "RL.SLIDING nofiles 10 60000")
	if code := srv.Stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--in-memory left files in its working directory: %v", entries)
	}
}

// A port already in use is a start-up failure (exit 1) that says why.
func TestPortInUse(t *testing.T) {
	t.Parallel()
	busy := startServer(t)
	_, stderr, code := runBinary(t, "--in-memory", "--bind", "127.0.0.1", "--port", busy.Port())
	if code != 1 || !strings.Contains(stderr, "address already in use") {
		t.Errorf("second server on port %s: exit %d, stderr %q; want exit 1, address already in use", busy.Port(), code, stderr)
	}
}

// With --raft-journal the shards' appends are synced through the node's
// journal: every decision acknowledged before a kill -9 is still counted
// after the restart (the journal left behind is replayed into the logs),
// and a clean stop leaves no journal to replay. What a power loss would
// take (the logs' unsynced writes) is simulated in persistence's tests.
func TestJournalledNodeKeepsEveryDecisionAcrossAKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := []string{"--port", "0", "--bind", "127.0.0.1", "--shards", "4"}
	args := append(plain[:len(plain):len(plain)], "--raft-journal")
	first := launch(t, dir, args...)
	c := first.Client(t, 3)
	// 40 keys over the four shards, 3 of 10 hourly tokens taken from each.
	for k := range 40 {
		for range 3 {
			decide(t, c, fmt.Sprintf("RL.TOKEN journal:%d 10 1 3600000", k))
		}
	}
	first.Kill()
	segments, _ := filepath.Glob(filepath.Join(dir, "rlserver-data", "journal", "journal-*.log"))
	if len(segments) == 0 {
		t.Fatal("no journal segment left by a node killed while it ran with --raft-journal")
	}

	second := launch(t, dir, args...)
	c = second.Client(t, 3)
	for k := range 40 {
		if d := decide(t, c, fmt.Sprintf("RL.TOKEN journal:%d 10 1 3600000 COST 0", k)); d.Remaining != 7 {
			t.Fatalf("journal:%d after kill -9 and a restart: %v, want the 7 tokens left", k, d)
		}
	}
	if code := second.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, second.Log())
	}
	if segments, _ := filepath.Glob(filepath.Join(dir, "rlserver-data", "journal", "journal-*.log")); len(segments) != 0 {
		t.Errorf("a clean stop left journal segments %v", segments)
	}

	// Without the flag the node starts on the same directory: its logs are
	// complete, journal or not.
	third := launch(t, dir, plain...)
	if d := decide(t, third.Client(t, 3), "RL.TOKEN journal:0 10 1 3600000 COST 0"); d.Remaining != 7 {
		t.Errorf("without --raft-journal: %v, want the 7 tokens left", d)
	}
}
