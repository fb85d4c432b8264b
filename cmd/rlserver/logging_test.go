package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// hashicorp/raft's hclog lines come out as records of the process's logger:
// one JSON object a line with --log-format json, filtered by --log-level.
func TestHclogLinesBecomeRecords(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(options{logLevel: "warn", logFormat: "json"}, &out)
	w := &hclogWriter{log: log}
	// Written in pieces, as a writer may be.
	text := "2026-01-02T15:04:05.000Z [WARN]  raft.shard0: heartbeat timeout reached, starting election: last-leader-addr= last-leader-id=\n" +
		"2026-01-02T15:04:05.001Z [INFO]  raft.shard0: entering candidate state: node=\"Node at local\" term=2\n" +
		"2026-01-02T15:04:05.002Z [ERROR] raft.net: failed to accept connection: error=\"boom\"\n" +
		"not an hclog line\n"
	for _, piece := range []string{text[:50], text[50:170], text[170:]} {
		if n, err := w.Write([]byte(piece)); n != len(piece) || err != nil {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		got = append(got, rec)
	}
	want := []struct{ level, component, msg string }{
		{"WARN", "raft.shard0", "heartbeat timeout reached, starting election: last-leader-addr= last-leader-id="},
		// the INFO line is below --log-level warn
		{"ERROR", "raft.net", `failed to accept connection: error="boom"`},
		{"WARN", "raft", "not an hclog line"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(got), len(want), out.String())
	}
	for i, w := range want {
		if got[i]["level"] != w.level || got[i]["component"] != w.component || got[i]["msg"] != w.msg {
			t.Errorf("record %d: %v, want %+v", i, got[i], w)
		}
	}
}

func TestParseLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "warning": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := parseLogLevel(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	if _, err := parseLogLevel("trace"); err == nil {
		t.Errorf("trace: accepted")
	}
}
