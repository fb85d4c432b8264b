package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlserver/rlserver/rls"
)

// The rate limit service's settings that cannot work are refused at start,
// naming the setting; a bad config names its file and line.
func TestRLSSettingErrors(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("domain: d\n"), 0o644)
	os.WriteFile(bad, []byte("domain: d\ndescriptors:\n  - value: v\n"), 0o644)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"port range", []string{"--grpc-port", "70000", "--rls-config", good}, nil, "--grpc-port 70000: must be from 1 to 65535, or 0 for off"},
		{"port taken by the client port", []string{"--grpc-port", "7000", "--port", "7000", "--rls-config", good}, nil,
			"--grpc-port 7000: is already the client, TLS or metrics port"},
		{"no config", []string{"--grpc-port", "8081"}, nil, "--grpc-port needs --rls-config or --rls-xds-server: the limits to serve"},
		{"config and xds", []string{"--grpc-port", "8081", "--rls-config", good, "--rls-xds-server", "cp:18001"}, nil,
			"--rls-xds-server and --rls-config exclude each other: the limits come from one or the other"},
		{"xds without port", []string{"--rls-xds-server", "cp:18001"}, nil, "--rls-xds-server needs --grpc-port: the port to serve its limits on"},
		{"xds server not host:port", []string{"--grpc-port", "8081", "--rls-xds-server", "cp"}, nil, `--rls-xds-server "cp": must be host:port`},
		{"xds setting without server", []string{"--grpc-port", "8081", "--rls-config", good, "--rls-xds-node-id", "n"}, nil,
			"--rls-xds-node-id needs --rls-xds-server"},
		{"xds tls file without tls", []string{"--grpc-port", "8081", "--rls-xds-server", "cp:18001", "--rls-xds-tls-ca-cert-file", good}, nil,
			"--rls-xds-tls-ca-cert-file needs --rls-xds-tls yes"},
		{"xds cert without key", []string{"--grpc-port", "8081", "--rls-xds-server", "cp:18001", "--rls-xds-tls", "yes", "--rls-xds-tls-cert-file", good}, nil,
			"--rls-xds-tls-cert-file and --rls-xds-tls-key-file go together"},
		{"xds ca not PEM", []string{"--grpc-port", "8081", "--rls-xds-server", "cp:18001", "--rls-xds-tls", "yes", "--rls-xds-tls-ca-cert-file", good}, nil,
			"--rls-xds-tls-ca-cert-file " + good + ": no PEM certificate in it"},
		{"xds metadata", []string{"--grpc-port", "8081", "--rls-xds-server", "cp:18001", "--rls-xds-node-metadata", "zone"}, nil,
			`--rls-xds-node-metadata "zone": "zone" is not key=value`},
		{"xds retry max below the interval", []string{"--grpc-port", "8081", "--rls-xds-server", "cp:18001", "--rls-xds-retry-interval", "5s", "--rls-xds-retry-max", "1s"}, nil,
			"--rls-xds-retry-max 1s: must be from --rls-xds-retry-interval (5s) to 1h"},
		{"grpc-tls without port", []string{"--grpc-tls", "yes"}, nil, "--grpc-tls needs --grpc-port"},
		{"grpc-tls without a certificate", []string{"--grpc-port", "8081", "--rls-config", good, "--grpc-tls", "yes"}, nil,
			"--grpc-tls needs --tls-cert-file"},
		{"config without port", []string{"--rls-config", good}, nil, "--rls-config needs --grpc-port: the port to serve it on"},
		{"headers without port", []string{"--rls-response-headers", "yes"}, nil, "--rls-response-headers needs --grpc-port"},
		{"bad config", []string{"--grpc-port", "8081"}, map[string]string{"RLSERVER_RLS_CONFIG": bad},
			"RLSERVER_RLS_CONFIG: --rls-config: " + bad + ":3: a descriptor needs a key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, tc.args...)
			_, err := parseFlags(args, io.Discard, env(tc.env))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant       %s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("%v does not wrap ErrInvalidSetting", err)
			}
		})
	}
	_, err := parseFlags([]string{"--grpc-port", "8081", "--rls-config", bad}, io.Discard, env(nil))
	if !errors.Is(err, rls.ErrConfig) {
		t.Errorf("a bad config's error wraps rls.ErrConfig: %v", err)
	}
	o, err := parseFlags([]string{"--grpc-port", "8081", "--rls-config", good, "--rls-response-headers", "yes"}, io.Discard, env(nil))
	if err != nil || o.rls.loaded == nil || o.rls.loaded.Domains() != 1 || !bool(o.rls.headers) {
		t.Fatalf("good settings: %v %+v", err, o.rls)
	}
}
