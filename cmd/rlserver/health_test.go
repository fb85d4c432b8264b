package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// rlserver health exits 0 when the metrics port answers 200 on /readyz
// (/healthz with --live) and 1 otherwise, saying why; without --addr it
// asks the port the environment gives the node, on loopback when the node
// binds a wildcard, as in the image.
func TestHealthAsksTheMetricsPort(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			w.Write([]byte("ok\n"))
		case r.URL.Path == "/readyz" && ready:
			w.Write([]byte("ready\n"))
		case r.URL.Path == "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: shard 2 has no known leader\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedAddr := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()

	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		notReady bool
		code     int
		out      string // in stdout when 0, stderr otherwise
	}{
		{"ready", []string{"--addr", u.Host}, nil, false, 0, "ready"},
		{"not ready", []string{"--addr", u.Host}, nil, true, 1, "503 Service Unavailable: not ready: shard 2 has no known leader"},
		{"alive though not ready", []string{"--addr", u.Host, "--live"}, nil, true, 0, "ok"},
		{"the environment's port, wildcard bind", nil, map[string]string{"RLSERVER_METRICS_PORT": port, "RLSERVER_BIND": "0.0.0.0"}, false, 0, "ready"},
		{"the environment's port and bind", nil, map[string]string{"RLSERVER_METRICS_PORT": port, "RLSERVER_BIND": "127.0.0.1"}, false, 0, "ready"},
		{"no metrics port", nil, map[string]string{"RLSERVER_METRICS_PORT": "0"}, false, 1, "no metrics port to ask"},
		{"nothing listens", []string{"--addr", closedAddr}, nil, false, 1, "connection refused"},
		{"bad flag", []string{"--adr", u.Host}, nil, false, 1, "flag provided but not defined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ready = !tc.notReady
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"health"}, tc.args...), &stdout, &stderr, env(tc.env))
			out := stdout.String()
			if tc.code != 0 {
				out = stderr.String()
			}
			if code != tc.code || !strings.Contains(out, tc.out) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout.String(), stderr.String(), tc.code, tc.out)
			}
		})
	}
}
