package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

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

// --log-output picks the stream the log is written to: stderr unless told
// stdout, from the command line, the environment (the image's
// RLSERVER_LOG_OUTPUT) or the config file.
func TestLogOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default", nil, nil, "stderr"},
		{"flag", []string{"--log-output", "stdout"}, nil, "stdout"},
		{"environment", nil, map[string]string{"RLSERVER_LOG_OUTPUT": "stdout"}, "stdout"},
		{"flag over environment", []string{"--log-output", "stderr"}, map[string]string{"RLSERVER_LOG_OUTPUT": "stdout"}, "stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--in-memory", "--log-format", "json"}, tc.args...)
			o, err := parseFlags(args, io.Discard, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			newLogger(o, logWriter(o, &stdout, &stderr)).Info("hello")
			got, other := &stdout, &stderr
			if tc.want == "stderr" {
				got, other = &stderr, &stdout
			}
			if !strings.Contains(got.String(), `"msg":"hello"`) || other.Len() != 0 {
				t.Errorf("want the log on %s: stdout %q, stderr %q", tc.want, stdout.String(), stderr.String())
			}
		})
	}
}
