package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/server"
)

// env is a fake environment.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// writeConfig writes a config file in a fresh directory and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rlserver.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The command line wins over the environment, which wins over the file,
// which wins over the defaults, setting by setting.
func TestSettingsPrecedence(t *testing.T) {
	path := writeConfig(t, `# every layer sets some of these
port 7001
maxclients 300
max-key-len 300
requirepass "from the file"
in-memory
metrics-port 9001
log-format json
`)
	o, err := parseFlags([]string{"--config", path, "--port", "7003"}, io.Discard, env(map[string]string{
		"RLSERVER_PORT":       "7002", // loses to the command line
		"RLSERVER_MAXCLIENTS": "200",  // wins over the file
		"RLSERVER_SHARDS":     "",     // empty: unset
		"RLSERVER_LOG_LEVEL":  "warn",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"port", o.port, 7003},
		{"maxclients", o.maxClients, 200},
		{"max-key-len", o.limits.MaxKeyLen, 300},
		{"requirepass", o.requirePass, "from the file"},
		{"in-memory", o.inMemory, true},
		{"metrics-port", o.metricsPort, 9001},
		{"log-format", o.logFormat, "json"},
		{"log-level", o.logLevel, "warn"},
		{"max-args", o.limits.MaxArgs, int64(4096)}, // the default
		{"bind", o.bind, "127.0.0.1"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if o.shards < 1 {
		t.Errorf("shards %d: the default was not applied", o.shards)
	}
}

// RLSERVER_CONFIG names the file when --config does not; --config wins.
func TestConfigFileFromTheEnvironment(t *testing.T) {
	fromEnv := writeConfig(t, "port 7101\nin-memory yes\n")
	fromFlag := writeConfig(t, "port 7102\nin-memory true\n")
	o, err := parseFlags(nil, io.Discard, env(map[string]string{"RLSERVER_CONFIG": fromEnv}))
	if err != nil || o.port != 7101 || o.configPath != fromEnv {
		t.Errorf("RLSERVER_CONFIG: port %d, config %q, err %v", o.port, o.configPath, err)
	}
	o, err = parseFlags([]string{"--config", fromFlag}, io.Discard, env(map[string]string{"RLSERVER_CONFIG": fromEnv}))
	if err != nil || o.port != 7102 {
		t.Errorf("--config over RLSERVER_CONFIG: port %d, err %v", o.port, err)
	}
}

// Every error about a setting names it, and where its value came from when
// that was not the command line; it wraps ErrInvalidSetting.
func TestSettingErrorsNameTheSetting(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string // the whole error text; FILE stands for the file's path
	}{
		{"flag out of range", []string{"--port", "70000"}, nil, "",
			"--port 70000: must be from 0 to 65535"},
		{"env out of range", nil, map[string]string{"RLSERVER_PORT": "70000"}, "",
			"RLSERVER_PORT: --port 70000: must be from 0 to 65535"},
		{"file out of range", nil, nil, "\n\nshards 2000\n",
			"FILE:3: --shards 2000: must be from 1 to 1024"},
		{"env malformed", nil, map[string]string{"RLSERVER_MAX_KEY_LEN": "big"}, "",
			`RLSERVER_MAX_KEY_LEN: invalid value "big" for --max-key-len: parse error`},
		{"file malformed", nil, nil, "raft-heartbeat soon\n",
			`FILE:1: invalid value "soon" for --raft-heartbeat: parse error`},
		{"file unknown name", nil, nil, "# comment\nprot 6380\n",
			`FILE:2: unknown setting "prot"`},
		{"file not a setting", nil, nil, "version\n",
			`FILE:1: unknown setting "version"`},
		{"file twice", nil, nil, "port 1\nport 2\n",
			"FILE:2: port is already set on line 1"},
		{"file bare non-boolean", nil, nil, "port\n",
			"FILE:1: --port needs a value"},
		{"file bad quotes", nil, nil, `requirepass "open` + "\n",
			`FILE:1: requirepass: unterminated or malformed quoted value "open`},
		{"snapshot nice", []string{"--snapshot-nice", "20"}, nil, "",
			"--snapshot-nice 20: must be from 0 to 19"},
		{"maxmemory", []string{"--maxmemory", "lots"}, nil, "",
			`--maxmemory "lots": invalid memory size "lots": bytes, or a number with k, kb, m, mb, g or gb`},
		{"maxmemory-policy", nil, nil, "maxmemory-policy allkeys-lru\n",
			`FILE:1: --maxmemory-policy: unknown maxmemory-policy "allkeys-lru": use noeviction or volatile-ttl`},
		{"log level", nil, map[string]string{"RLSERVER_LOG_LEVEL": "loud"}, "",
			`RLSERVER_LOG_LEVEL: --log-level "loud": must be debug, info, warn or error`},
		{"log format", []string{"--log-format", "xml"}, nil, "",
			`--log-format "xml": must be text or json`},
		{"log output", nil, map[string]string{"RLSERVER_LOG_OUTPUT": "/var/log/rlserver.log"}, "",
			`RLSERVER_LOG_OUTPUT: --log-output "/var/log/rlserver.log": must be stderr or stdout`},
		{"metrics port", nil, nil, "metrics-port 70000\n",
			"FILE:1: --metrics-port 70000: must be from 1 to 65535, or 0 for off"},
		{"metrics port is the client port", []string{"--port", "7000", "--metrics-port", "7000"}, nil, "",
			"--metrics-port 7000: is the client --port"},
		{"announce without join", []string{"--announce", "127.0.0.1:6384"}, nil, "",
			"--announce needs --join: with --cluster alone, the list says where each node is"},
		{"auto-rebalance on a single node", []string{"--auto-rebalance"}, nil, "",
			"--auto-rebalance needs --cluster or --join: a single node has nothing to rebalance"},
		{"rejoin-if-forgotten without join", []string{"--rejoin-if-forgotten", "--cluster", "n1@127.0.0.1:6380,n2@127.0.0.1:6382"}, nil, "",
			"--rejoin-if-forgotten needs --join: the member to join again through"},
		{"desired-nodes-file on a single node", []string{"--desired-nodes-file", "/etc/rl/nodes"}, nil, "",
			"--desired-nodes-file needs --cluster or --join: a single node has no cluster to leave"},
		{"desired-nodes-file without an ordinal", []string{"--desired-nodes-file", "/etc/rl/nodes", "--node-id", "rl", "--join", "127.0.0.1:6381"}, nil, "",
			`--desired-nodes-file: --node-id "rl" does not end with a number (a StatefulSet's pod ordinal)`},
		{"two sources of the desired number", []string{"--desired-nodes-file", "/etc/rl/nodes", "--desired-nodes-statefulset", "rl", "--node-id", "rl-0", "--join", "127.0.0.1:6381"}, nil, "",
			"--desired-nodes-statefulset and --desired-nodes-file exclude each other: the number comes from one place"},
		{"leave-timeout too short", []string{"--leave-timeout", "10ms", "--join", "127.0.0.1:6381"}, nil, "",
			"--leave-timeout 10ms: must be from 1s to 1h"},
		{"replace-dead-after on a single node", []string{"--replace-dead-after", "10m"}, nil, "",
			"--replace-dead-after 10m0s: must be 0, or positive in a cluster"},
		{"exclusive settings across layers", []string{"--in-memory"}, map[string]string{"RLSERVER_DATA_DIR": "/var/lib/rl"}, "",
			"RLSERVER_DATA_DIR: --in-memory and --data-dir exclude each other"},
		{"cluster from a file", nil, nil, "cluster nonsense\n",
			`FILE:1: --cluster: "nonsense" is not id@host:port[@busport]`},
		{"negative event loops", nil, nil, "event-loops -1\n",
			"FILE:1: --event-loops -1: must be from 0 to 1024"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			var path string
			if tc.file != "" {
				path = writeConfig(t, tc.file)
				args = append([]string{"--config", path}, args...)
			}
			// A fresh data dir, unless the case sets one: the default shard
			// count must read no data directory.
			if _, own := tc.env["RLSERVER_DATA_DIR"]; !own {
				args = append([]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, args...)
			}
			_, err := parseFlags(args, io.Discard, env(tc.env))
			want := strings.ReplaceAll(tc.want, "FILE", path)
			if err == nil || err.Error() != want {
				t.Fatalf("error %v\nwant       %s", err, want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("%v does not wrap ErrInvalidSetting", err)
			}
		})
	}
}

// A missing config file is an error that says so.
func TestMissingConfigFile(t *testing.T) {
	_, err := parseFlags([]string{"--config", filepath.Join(t.TempDir(), "none.conf")}, io.Discard, env(nil))
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "--config: open ") {
		t.Fatalf("error %v, want --config: open ...: no such file", err)
	}
}

// --version and --help read neither the environment nor the file, so they
// work whatever the settings.
func TestVersionIgnoresOtherSettings(t *testing.T) {
	o, err := parseFlags([]string{"--version"}, io.Discard, env(map[string]string{"RLSERVER_PORT": "nonsense", "RLSERVER_CONFIG": "/nonexistent"}))
	if err != nil || !o.version {
		t.Fatalf("--version: %v", err)
	}
	if _, err := parseFlags([]string{"--help"}, io.Discard, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
}

// The file's syntax: comments, quotes, tabs, booleans alone or with yes/no.
func TestConfigLineSyntax(t *testing.T) {
	for line, want := range map[string]fileSetting{
		"port 6380":                     {name: "port", value: "6380"},
		"  port\t6380  ":                {name: "port", value: "6380"},
		"--port 6380":                   {name: "port", value: "6380"},
		"requirepass a#b":               {name: "requirepass", value: "a#b"},
		"requirepass ab # comment":      {name: "requirepass", value: "ab"},
		`requirepass "two words" # why`: {name: "requirepass", value: "two words"},
		`requirepass ""`:                {name: "requirepass", value: ""},
		"in-memory":                     {name: "in-memory", bare: true},
	} {
		got, ok, err := parseConfigLine(line)
		if err != nil || !ok || got != want {
			t.Errorf("%q: %+v %v %v, want %+v", line, got, ok, err, want)
		}
	}
	for _, line := range []string{"", "   ", "# port 1", "  # x"} {
		if _, ok, err := parseConfigLine(line); ok || err != nil {
			t.Errorf("%q: ok %v err %v, want skipped", line, ok, err)
		}
	}
	o, err := parseFlags(nil, io.Discard, env(map[string]string{"RLSERVER_CONFIG": writeConfig(t, "in-memory no\nenable-debug-command yes\n"),
		"RLSERVER_DATA_DIR": filepath.Join(t.TempDir(), "d")}))
	if err != nil || o.inMemory || !o.debug {
		t.Errorf("yes/no booleans: in-memory %v debug %v err %v", o.inMemory, o.debug, err)
	}
}

// On Linux, plain connections are served by event loops, one for every two
// CPUs, unless --event-loops says otherwise: in memory, and with durable
// state (whose decisions the loops suspend while they wait for commits).
func TestEventLoopsDefault(t *testing.T) {
	want := 0
	if server.EventLoopsSupported {
		want = max(1, runtime.NumCPU()/2)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--in-memory"}, want},
		{[]string{"--in-memory", "--event-loops", "0"}, 0},
		{[]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, want},
		{[]string{"--data-dir", filepath.Join(t.TempDir(), "e"), "--event-loops", "0"}, 0},
	} {
		o, err := parseFlags(tc.args, io.Discard, env(nil))
		if err != nil || o.eventLoops != tc.want {
			t.Errorf("%v: event loops %d, %v; want %d", tc.args, o.eventLoops, err, tc.want)
		}
	}
}
