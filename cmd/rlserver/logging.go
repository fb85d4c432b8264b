package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// logWriter is where --log-output sends the log: stdout or stderr. A
// container's runtime keeps both, but its log collectors (Kubernetes',
// Docker's) and platform conventions expect an application's log on
// standard output, and standard error for what went wrong before it.
func logWriter(o options, stdout, stderr io.Writer) io.Writer {
	if o.logOutput == "stdout" {
		return stdout
	}
	return stderr
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
