package main

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// --http-port out of range or on another port of the node is refused at
// start; RLSERVER_HTTP_PORT sets it as the others' variables do.
func TestHTTPSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-port", "70000"}, "--http-port 70000: must be from 1 to 65535, or 0 for off"},
		{[]string{"--http-port", "7000", "--port", "7000"}, "--http-port 7000: is already the client, TLS, metrics or gRPC port"},
		{[]string{"--http-port", "9380", "--metrics-port", "9380"}, "--http-port 9380: is already the client, TLS, metrics or gRPC port"},
	} {
		args := append([]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, tc.args...)
		_, err := parseFlags(args, io.Discard, env(nil))
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidSetting) {
			t.Errorf("%v: error %v, want %s", tc.args, err, tc.want)
		}
	}
	o, err := parseFlags([]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, io.Discard, env(map[string]string{"RLSERVER_HTTP_PORT": "8080"}))
	if err != nil || o.httpPort != 8080 {
		t.Fatalf("RLSERVER_HTTP_PORT: %v %d", err, o.httpPort)
	}
}
