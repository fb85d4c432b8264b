package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// hashicorp/raft's records become records of the node's logger: one JSON
// object a line with a JSON handler, the raft logger's name as component,
// raft's arguments as attributes, at the level rlserver gives them, and
// filtered by the handler's level.
func TestRaftRecordsBecomeTheNodesRecords(t *testing.T) {
	type record struct{ level, component, msg string }
	cases := []struct {
		name  string
		level slog.Level // the handler's
		log   func(l hclog.Logger)
		want  []record
		attrs map[string]any // of the first record
	}{
		{"a fresh node's first election is routine", slog.LevelInfo,
			func(l hclog.Logger) {
				l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID(""))
			},
			[]record{{"INFO", "raft.shard0", "heartbeat timeout reached, starting election"}},
			map[string]any{"last-leader-id": ""}},
		{"and below --log-level warn", slog.LevelWarn,
			func(l hclog.Logger) {
				l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID(""))
			},
			nil, nil},
		{"losing a leader is a warning", slog.LevelWarn,
			func(l hclog.Logger) {
				l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress("h:1"), "last-leader-id", raft.ServerID("n2"))
			},
			[]record{{"WARN", "raft.shard0", "heartbeat timeout reached, starting election"}},
			map[string]any{"last-leader-id": "n2"}},
		{"a new replica's first append is routine", slog.LevelWarn,
			func(l hclog.Logger) {
				l.Warn("failed to get previous log", "previous-index", uint64(8), "last-index", uint64(0), "error", raft.ErrLogNotFound)
			},
			nil, nil},
		{"a replica with entries that do not match is a warning", slog.LevelWarn,
			func(l hclog.Logger) {
				l.Warn("failed to get previous log", "previous-index", uint64(80), "last-index", uint64(75), "error", raft.ErrLogNotFound)
			},
			[]record{{"WARN", "raft.shard0", "failed to get previous log"}},
			map[string]any{"last-index": float64(75)}},
		{"real warnings and errors stay", slog.LevelWarn,
			func(l hclog.Logger) {
				l.Warn("failed to contact", "server-id", raft.ServerID("n3"), "time", "2s")
				l.Named("net").Error("failed to accept connection", "error", fmt.Errorf("boom"))
			},
			[]record{{"WARN", "raft.shard0", "failed to contact"}, {"ERROR", "raft.shard0.net", "failed to accept connection"}},
			map[string]any{"server-id": "n3"}},
		{"an orderly stop's transport errors are dropped", slog.LevelDebug,
			func(l hclog.Logger) {
				l.Error("failed to decode incoming command", "error", raft.ErrTransportShutdown)
				l.Error("failed to appendEntries to", "peer", "n2", "error", fmt.Errorf("rpc: %w", raft.ErrTransportShutdown))
			},
			nil, nil},
		{"a stop's snapshot with nothing new is routine", slog.LevelInfo,
			func(l hclog.Logger) { l.Error("failed to take snapshot", "error", raft.ErrNothingNewToSnapshot) },
			nil, nil},
		{"a snapshot that failed is an error", slog.LevelInfo,
			func(l hclog.Logger) {
				l.Error("failed to take snapshot", "error", fmt.Errorf("failed to start snapshot: %v", "halted"))
			},
			[]record{{"ERROR", "raft.shard0", "failed to take snapshot"}},
			map[string]any{"error": "failed to start snapshot: halted"}},
		{"routine steps are debug records", slog.LevelDebug,
			func(l hclog.Logger) {
				l.Info("entering leader state", "leader", "n1")
				l.Debug("accepted connection")
				l.Trace("dropped as well")
			},
			[]record{{"DEBUG", "raft.shard0", "entering leader state"}},
			map[string]any{"leader": "n1"}},
		{"and below --log-level info", slog.LevelInfo,
			func(l hclog.Logger) { l.Info("entering leader state", "leader", "n1") },
			nil, nil},
		{"implied and lazily formatted arguments", slog.LevelDebug,
			func(l hclog.Logger) {
				l.With("snapshot-id", "s1").Info("starting snapshot", "servers", hclog.Fmt("%d servers", 3))
			},
			[]record{{"DEBUG", "raft.shard0", "starting snapshot"}},
			map[string]any{"snapshot-id": "s1", "servers": "3 servers"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			l := newRaftLogger(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: c.level})), "raft.shard0")
			c.log(l)
			var got []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if line == "" {
					continue
				}
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("not JSON: %q", line)
				}
				got = append(got, rec)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d records, want %d:\n%s", len(got), len(c.want), out.String())
			}
			for i, w := range c.want {
				if got[i]["level"] != w.level || got[i]["component"] != w.component || got[i]["msg"] != w.msg {
					t.Errorf("record %d: %v, want %+v", i, got[i], w)
				}
			}
			for k, v := range c.attrs {
				if got[0][k] != v {
					t.Errorf("%s = %v, want %v", k, got[0][k], v)
				}
			}
		})
	}
}

// The logger reports the levels that reach the handler, and its standard
// log.Logger writes records of it.
func TestRaftLoggerLevelsAndStandardLogger(t *testing.T) {
	var out bytes.Buffer
	l := newRaftLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")
	if l.IsTrace() || l.IsDebug() || l.IsInfo() || !l.IsWarn() || !l.IsError() {
		t.Errorf("at info: trace %v debug %v info %v warn %v error %v, want only warn and error",
			l.IsTrace(), l.IsDebug(), l.IsInfo(), l.IsWarn(), l.IsError())
	}
	l.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("from the standard log")
	if s := out.String(); !strings.Contains(s, "level=ERROR") || !strings.Contains(s, `msg="from the standard log"`) {
		t.Errorf("standard logger wrote %q", s)
	}
	if n := l.Named("net"); n.Name() != "raft.net" || n.ResetNamed("x").Name() != "x" {
		t.Errorf("names %q, %q", n.Name(), n.ResetNamed("x").Name())
	}
}

// A single node's start and orderly stop log nothing an operator would read
// as a fault, on a fresh data directory and on a restart: its first
// election is an info record, and raft writes no warning and no error.
func TestRaftSingleNodeStartsAndStopsWithoutWarnings(t *testing.T) {
	dir := t.TempDir()
	self := Member{ID: "n1", Bus: "local"}
	for _, start := range []string{"fresh", "restart"} {
		layout, err := persistence.Open(dir, persistence.Identity{NodeID: "n1", Shards: 1, Members: []string{"n1"}})
		if err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		cfg := DefaultRaftConfig(self, 1)
		cfg.Layout = layout.Layout
		cfg.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
		n, err := startAlone(cfg)
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, start+": a leader", func() (bool, error) {
			_, ok := n.leaderOf(0)
			return ok, nil
		})
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		elections := 0
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: not JSON: %q", start, line)
			}
			switch {
			case rec["level"] == "WARN" || rec["level"] == "ERROR":
				t.Errorf("%s: %s", start, line)
			case rec["component"] == "raft.shard0" && rec["msg"] == "heartbeat timeout reached, starting election":
				elections++
			}
		}
		if elections != 1 {
			t.Errorf("%s: %d election records, want 1:\n%s", start, elections, out.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer that raft's goroutines can write to while
// a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
