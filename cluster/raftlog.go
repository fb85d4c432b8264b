package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// hashicorp/raft, its network transport and its snapshot store log through
// go-hclog. The logger they are given (raftLogger) turns each of their
// records into one of the node's own (RaftConfig.Log), so that every line
// rlserver writes has one format and obeys one level: the message, raft's
// arguments as attributes, and the raft logger's name as the component
// attribute (raft.shard3, raft.net, snapshots).
//
// The level is rlserver's, decided by what the operator should do about the
// record (raftLevel): raft's warnings and errors stay warnings and errors,
// but for the few it logs in the normal course of things, and its routine
// steps (elections won, snapshots taken) are debug records.

// raftLogger is an hclog.Logger that logs into a slog.Logger.
type raftLogger struct {
	log     *slog.Logger
	name    string
	implied []any // With's arguments, added to every record
}

// newRaftLogger is the logger named name (the component of its records)
// that logs into log.
func newRaftLogger(log *slog.Logger, name string) hclog.Logger {
	return &raftLogger{log: log, name: name}
}

// raftLevel is the level rlserver logs a raft record at; false drops it.
//   - Trace and debug records are raft's developers' business: dropped.
//   - Info records are routine steps (an election won, a snapshot taken):
//     debug.
//   - A warning stays one, but for the election a node starts when it has
//     had no leader since it started (every start of a single node, and of
//     a cluster's first nodes), and for an append a replica that holds no
//     entry yet cannot match (a replica just added, which the leader then
//     catches up): nothing is wrong, so info.
//   - An error stays one, but for those an orderly stop causes: the
//     transport's shutting down (dropped), and a snapshot with nothing new
//     to write (debug: rlserver asks for one at every stop).
func raftLevel(level hclog.Level, msg string, args []any) (slog.Level, bool) {
	switch {
	case level <= hclog.Debug:
		return 0, false
	case level == hclog.Info:
		return slog.LevelDebug, true
	case level == hclog.Warn:
		if msg == "heartbeat timeout reached, starting election" && fmt.Sprint(argValue(args, "last-leader-id")) == "" {
			return slog.LevelInfo, true
		}
		if msg == "failed to get previous log" && fmt.Sprint(argValue(args, "last-index")) == "0" {
			return slog.LevelInfo, true
		}
		return slog.LevelWarn, true
	}
	for i := 1; i < len(args); i += 2 {
		if err, ok := args[i].(error); ok {
			switch {
			case errors.Is(err, raft.ErrTransportShutdown):
				return 0, false
			case errors.Is(err, raft.ErrNothingNewToSnapshot):
				return slog.LevelDebug, true
			}
		}
	}
	return slog.LevelError, true
}

// argValue is the value of key among hclog's key-value arguments, or nil.
func argValue(args []any, key string) any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == key {
			return args[i+1]
		}
	}
	return nil
}

// Log logs a record at the level raftLevel gives it.
func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	to, ok := raftLevel(level, msg, args)
	if !ok || !l.log.Enabled(context.Background(), to) {
		return
	}
	attrs := make([]any, 0, 2+len(l.implied)+len(args))
	attrs = append(attrs, "component", l.name)
	attrs = appendArgs(attrs, l.implied)
	attrs = appendArgs(attrs, args)
	l.log.Log(context.Background(), to, msg, attrs...)
}

// appendArgs appends hclog's key-value arguments as slog's, formatting the
// values raft formats lazily (hclog.Fmt).
func appendArgs(attrs, args []any) []any {
	for _, a := range args {
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			format, _ := f[0].(string)
			a = fmt.Sprintf(format, f[1:]...)
		}
		attrs = append(attrs, a)
	}
	return attrs
}

// Trace logs at hclog.Trace.
func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }

// Debug logs at hclog.Debug.
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }

// Info logs at hclog.Info.
func (l *raftLogger) Info(msg string, args ...any) { l.Log(hclog.Info, msg, args...) }

// Warn logs at hclog.Warn.
func (l *raftLogger) Warn(msg string, args ...any) { l.Log(hclog.Warn, msg, args...) }

// Error logs at hclog.Error.
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// IsTrace reports false: trace records are dropped.
func (l *raftLogger) IsTrace() bool { return false }

// IsDebug reports false: debug records are dropped.
func (l *raftLogger) IsDebug() bool { return false }

// IsInfo reports whether info records, logged as debug, are written.
func (l *raftLogger) IsInfo() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }

// IsWarn reports whether warnings are written (some are logged as info).
func (l *raftLogger) IsWarn() bool { return l.log.Enabled(context.Background(), slog.LevelInfo) }

// IsError reports whether errors are written.
func (l *raftLogger) IsError() bool { return l.log.Enabled(context.Background(), slog.LevelError) }

// ImpliedArgs returns the arguments With added.
func (l *raftLogger) ImpliedArgs() []any { return l.implied }

// With returns a logger that adds args to every record.
func (l *raftLogger) With(args ...any) hclog.Logger {
	return &raftLogger{log: l.log, name: l.name, implied: append(l.implied[:len(l.implied):len(l.implied)], args...)}
}

// Name returns the logger's name.
func (l *raftLogger) Name() string { return l.name }

// Named returns a logger whose name is this one's, a dot, and name.
func (l *raftLogger) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.ResetNamed(name)
}

// ResetNamed returns a logger named name.
func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	return &raftLogger{log: l.log, name: name, implied: l.implied}
}

// SetLevel does nothing: what is written is decided by raftLevel and the
// slog logger's own level (--log-level).
func (l *raftLogger) SetLevel(hclog.Level) {}

// GetLevel returns hclog.Info, the least severe level forwarded.
func (l *raftLogger) GetLevel() hclog.Level { return hclog.Info }

// StandardLogger returns a log.Logger whose lines are records of this one.
func (l *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer whose every write is a record of this
// logger, at opts.ForceLevel when set, otherwise at hclog.Info.
func (l *raftLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return lineWriter{l: l, level: level}
}

// lineWriter logs each write, a line of the standard log, as a record.
type lineWriter struct {
	l     *raftLogger
	level hclog.Level
}

func (w lineWriter) Write(p []byte) (int, error) {
	w.l.Log(w.level, strings.TrimRight(string(p), "\r\n"))
	return len(p), nil
}
