package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// parseLogLevel reads --log-level.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q", s)
}

// newLogger is the process's logger: --log-format's handler on w, writing
// records from --log-level up. The options have been validated.
func newLogger(o options, w io.Writer) *slog.Logger {
	level, _ := parseLogLevel(o.logLevel)
	opts := &slog.HandlerOptions{Level: level}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// hclogWriter turns the lines hashicorp/raft, its transport and its
// snapshot store log (through go-hclog, in its text format) into records of
// the process's logger, so that every line rlserver writes has one format
// (--log-format json stays one JSON object a line) and obeys --log-level.
//
//	2026-01-02T15:04:05.000Z [WARN]  raft.shard0: heartbeat timeout reached, starting election: last-leader-addr= ...
//
// becomes a WARN record whose message is what follows the logger's name,
// with that name as its component attribute. A line in another form is
// logged whole, as a warning.
type hclogWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte // an incomplete last line
}

func (w *hclogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.logLine(string(bytes.TrimRight(w.buf[:i], "\r")))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) == 0 {
		w.buf = nil // let a grown buffer go
	}
	return len(p), nil
}

// logLine logs one hclog line.
func (w *hclogWriter) logLine(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	level, component, msg, ok := parseHclogLine(line)
	if !ok {
		w.log.Warn(line, "component", "raft")
		return
	}
	w.log.Log(context.Background(), level, msg, "component", component)
}

// parseHclogLine splits an hclog text line into its level, logger name and
// message.
func parseHclogLine(line string) (level slog.Level, component, msg string, ok bool) {
	open := strings.Index(line, " [")
	if open < 0 {
		return 0, "", "", false
	}
	rest := line[open+2:]
	closing := strings.IndexByte(rest, ']')
	if closing < 0 {
		return 0, "", "", false
	}
	switch rest[:closing] {
	case "TRACE", "DEBUG":
		level = slog.LevelDebug
	case "INFO":
		level = slog.LevelInfo
	case "WARN":
		level = slog.LevelWarn
	case "ERROR":
		level = slog.LevelError
	default:
		return 0, "", "", false
	}
	rest = strings.TrimLeft(rest[closing+1:], " ")
	if name, text, found := strings.Cut(rest, ": "); found && !strings.ContainsAny(name, " \t") {
		return level, name, text, true
	}
	return level, "raft", rest, true
}
