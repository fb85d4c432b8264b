package main

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// The federation's settings that cannot work are refused at start, naming
// the setting; good ones, from the command line, the environment or a
// config file, make its config.
func TestFederationSettings(t *testing.T) {
	const secret = "sixteen bytes at least"
	peers := "us@10.0.0.2:7400,ap@10.0.0.3:7400"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"peers without a region", []string{"--federation", peers}, "--federation, --federation-port and --federation-secret need --region: this region's name"},
		{"a region alone", []string{"--region", "eu"}, "--region needs --federation: the other regions"},
		{"port range", []string{"--region", "eu", "--federation", peers, "--federation-port", "70000"}, "--federation-port 70000: must be from 1 to 65535, or 0 for any free port"},
		{"port taken", []string{"--region", "eu", "--federation", peers, "--federation-port", "7000", "--port", "7000"}, "--federation-port 7000: is already another of this node's ports"},
		{"bad peers", []string{"--region", "eu", "--federation", "us"}, `--federation: "us": want name@host:port`},
		{"bad floor", []string{"--region", "eu", "--federation", peers, "--federation-secret", secret, "--global-partition-floor", "half"},
			`--global-partition-floor: "half": must be 0, share, or a percentage from 1% to 100%`},
		{"short secret", []string{"--region", "eu", "--federation", peers, "--federation-secret", "short"},
			"--region, --federation: the federation's secret must be at least 16 bytes"},
		{"itself among the peers", []string{"--region", "eu", "--federation", "eu@h:1", "--federation-secret", secret},
			`--region, --federation: region "eu" is this one: list the other regions`},
		{"TLS without files", []string{"--region", "eu", "--federation", peers, "--federation-secret", secret, "--federation-tls", "yes"},
			"--federation-tls needs --tls-cert-file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, tc.args...)
			_, err := parseFlags(args, io.Discard, env(nil))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant       %s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("%v does not wrap ErrInvalidSetting", err)
			}
		})
	}
	path := writeConfig(t, "region eu\nfederation "+peers+"\nglobal-partition-floor 10%\nfederation-sync 50ms\n")
	o, err := parseFlags([]string{"--in-memory", "--config", path}, io.Discard, env(map[string]string{"RLSERVER_FEDERATION_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.fed.parsed
	if cfg.Region != "eu" || len(cfg.Peers) != 2 || cfg.Secret != secret || cfg.Floor.Percent != 10 || cfg.Sync != 50*time.Millisecond {
		t.Fatalf("config: %+v", cfg)
	}
}
