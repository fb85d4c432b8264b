package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// What an operator runs rlserver with: --metrics-port serves Prometheus
// metrics, /healthz and /readyz; settings come from flags, the environment
// and a config file.

// scrapeTimeout bounds one HTTP request to the metrics port.
const scrapeTimeout = 5 * time.Second

// httpGet fetches url and returns the status and body.
func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: scrapeTimeout}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// series are the samples of one scrape, by metric name and then by their
// labels as the exposition writes them (`shard="0",state="leader"`).
type series map[string]map[string]float64

// scrape reads /metrics in the text exposition format.
func scrape(t testing.TB, base string) series {
	t.Helper()
	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	out := series{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics: %q", line)
		}
		name, labels := line[:i], ""
		if j := strings.IndexByte(name, '{'); j >= 0 {
			name, labels = name[:j], strings.TrimSuffix(name[j+1:], "}")
		}
		if out[name] == nil {
			out[name] = map[string]float64{}
		}
		out[name][labels] = v
	}
	return out
}

// sum adds the samples of name whose labels contain every one of with.
func (s series) sum(name string, with ...string) float64 {
	var total float64
	for labels, v := range s[name] {
		match := true
		for _, w := range with {
			match = match && strings.Contains(labels, w)
		}
		if match {
			total += v
		}
	}
	return total
}

// waitReady polls /readyz until it answers 200, and returns what it said
// before (the first answer).
func waitReady(t testing.TB, base string) (firstCode int, firstBody string) {
	t.Helper()
	poll.Until(t, rlproc.StartTimeout, "/readyz to answer 200", func() (bool, error) {
		code, body := httpGet(t, base+"/readyz")
		if firstCode == 0 {
			firstCode, firstBody = code, body
		}
		if code == 200 {
			if body != "ready\n" {
				t.Errorf("/readyz 200 with %q", body)
			}
			return true, nil
		}
		if code != 503 {
			t.Fatalf("/readyz: %d %q, want 200 or 503", code, body)
		}
		return false, fmt.Errorf("/readyz still %d %q", code, body)
	})
	return firstCode, firstBody
}

// A durable node with --metrics-port: /readyz turns 200 once its shards have
// a leader, and the decision counters move with RL.SLIDING calls and agree
// with INFO, as do the keys, the clients and the Raft state.
func TestOperationsMetricsAgreeWithInfo(t *testing.T) {
	t.Parallel()
	srv, ports := startServerOnPorts(t, true, 1, func(ports []string) []string {
		return []string{"--metrics-port", ports[0], "--shards", "2"}
	})
	port := ports[0]
	base := "http://127.0.0.1:" + port
	if !strings.Contains(srv.Log(), `msg="metrics listening" addr=127.0.0.1:`+port) {
		t.Errorf("no metrics line in the log:\n%s", srv.Log())
	}
	if code, body := waitReady(t, base); code != 200 && !strings.HasPrefix(body, "not ready: ") {
		t.Errorf("/readyz before ready: %d %q, want a reason", code, body)
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}

	c := srv.Client(t, 2)
	before := scrape(t, base)
	// 3 allowed, then 2 denied, on each of two keys (of either shard, or both).
	for _, key := range []string{"ops:a", "ops:b"} {
		for range 5 {
			decide(t, c, "RL.SLIDING "+key+" 3 60000")
		}
	}
	// A shadow policy's would-be denial, and a new key refused at maxmemory.
	do(t, c, "RL.POLICY", "SET", "ops-shadow", "SLIDING", "1", "60000", "SHADOW")
	do(t, c, "RL.CHECK", "ops:s", "ops-shadow")
	do(t, c, "RL.CHECK", "ops:s", "ops-shadow")
	do(t, c, "CONFIG", "SET", "maxmemory", "1")
	if err := doErr(t, c, "RL.SLIDING", "ops:new", "3", "60000"); !strings.HasPrefix(err, "OOM ") {
		t.Errorf("a new key at maxmemory 1: %q, want OOM", err)
	}
	do(t, c, "CONFIG", "SET", "maxmemory", "0")
	// Budget leases: two holders, one of which gives its share back.
	share(t, c, "ops:share", 100, 1000, "h1")
	share(t, c, "ops:share", 100, 1000, "h2", "DEMAND", 10)
	doInt(t, c, "RL.UNSHARE", "ops:share", "h1")
	after := scrape(t, base)
	if d := after.sum("rlserver_shadow_denied_total") - before.sum("rlserver_shadow_denied_total"); d != 1 {
		t.Errorf("rlserver_shadow_denied_total moved by %v, want 1", d)
	}
	if d := after.sum("rlserver_rejected_oom_total") - before.sum("rlserver_rejected_oom_total"); d != 1 {
		t.Errorf("rlserver_rejected_oom_total moved by %v, want 1", d)
	}

	allowed := `command="rl.sliding",outcome="allowed"`
	denied := `command="rl.sliding",outcome="denied"`
	if d := after.sum("rlserver_decisions_total", allowed) - before.sum("rlserver_decisions_total", allowed); d != 6 {
		t.Errorf("rl.sliding allowed moved by %v, want 6", d)
	}
	if d := after.sum("rlserver_decisions_total", denied) - before.sum("rlserver_decisions_total", denied); d != 4 {
		t.Errorf("rl.sliding denied moved by %v, want 4", d)
	}
	for _, check := range []struct {
		metric  string
		with    string
		section string
		field   string
	}{
		{"rlserver_decisions_total", `outcome="allowed"`, "ratelimit", "rl_decisions_allowed"},
		{"rlserver_decisions_total", `outcome="denied"`, "ratelimit", "rl_decisions_denied"},
		{"rlserver_keys", "", "ratelimit", "rl_keys"},
		{"rlserver_dataset_bytes", "", "memory", "used_memory_dataset"},
		{"rlserver_evicted_keys_total", "", "stats", "evicted_keys"},
		{"rlserver_rejected_oom_total", "", "stats", "rl_rejected_oom"},
		{"rlserver_shadow_denied_total", "", "ratelimit", "rl_shadow_denied"},
		{"rlserver_share_keys", "", "shares", "rl_share_keys"},
		{"rlserver_share_holders", "", "shares", "rl_share_holders"},
		{"rlserver_share_committed_units", "", "shares", "rl_share_committed"},
		{"rlserver_share_grants_total", "", "shares", "rl_share_grants"},
		{"rlserver_share_returned_units_total", "", "shares", "rl_share_returned"},
		{"rlserver_share_lapsed_total", "", "shares", "rl_share_lapsed"},
		{"rlserver_connected_clients", "", "clients", "connected_clients"},
		{"rlserver_event_loop_clients", "", "clients", "event_loop_clients"},
		{"rlserver_maxclients", "", "clients", "maxclients"},
		{"rlserver_connections_received_total", "", "stats", "total_connections_received"},
		{"rlserver_connections_rejected_total", "", "stats", "rejected_connections"},
		{"rlserver_raft_state", `state="leader"`, "raft", "raft_shards_leading"},
	} {
		if got, want := after.sum(check.metric, check.with), float64(infoInt(t, c, check.section, check.field)); got != want {
			t.Errorf("%s{%s} = %v, INFO %s = %v", check.metric, check.with, got, check.field, want)
		}
	}
	if after.sum("rlserver_share_grants_total") != 2 || after.sum("rlserver_share_returned_units_total") != 100 ||
		after.sum("rlserver_share_holders") != 1 {
		t.Errorf("share metrics: grants %v, returned %v, holders %v; want 2, 100, 1", after.sum("rlserver_share_grants_total"),
			after.sum("rlserver_share_returned_units_total"), after.sum("rlserver_share_holders"))
	}
	if n := after.sum("rlserver_command_duration_seconds_count", `class="keyed"`); n < 10 {
		t.Errorf("keyed commands timed: %v, want at least 10", n)
	}
	if n := after.sum("rlserver_raft_log_store_duration_seconds_count"); n < 1 {
		t.Errorf("no Raft log write measured")
	}
	// Ten decisions, one at a time: ten entries at least, each of a request
	// or more.
	entries := after.sum("rlserver_raft_entry_requests_count") - before.sum("rlserver_raft_entry_requests_count")
	requests := after.sum("rlserver_raft_entry_requests_sum") - before.sum("rlserver_raft_entry_requests_sum")
	if entries < 10 || requests < entries {
		t.Errorf("entries moved by %v carrying %v requests, want at least 10, each of one or more", entries, requests)
	}
	if n := after.sum("rlserver_raft_leader_known"); n != 2 {
		t.Errorf("shards with a known leader: %v, want 2", n)
	}
	if v := after.sum("rlserver_ready"); v != 1 {
		t.Errorf("rlserver_ready = %v", v)
	}
	if after.sum("rlserver_build_info") != 1 || len(after["go_goroutines"]) == 0 || len(after["process_resident_memory_bytes"]) == 0 {
		t.Errorf("build, Go or process metrics missing")
	}
	if code, _ := httpGet(t, base+"/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ on the metrics port: %d, want 404 (it has its own --pprof address)", code)
	}
}

// Without --metrics-port nothing listens for HTTP.
func TestOperationsMetricsOffByDefault(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	if strings.Contains(srv.Log(), "metrics listening") {
		t.Errorf("metrics served without --metrics-port:\n%s", srv.Log())
	}
}

// Settings from a config file, overridden by the environment, overridden by
// flags; INFO names the file. Not parallel: it sets the environment the
// server inherits.
func TestOperationsConfigFileAndEnvironment(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "rlserver.conf")
	t.Setenv("RLSERVER_CONFIG", conf)
	t.Setenv("RLSERVER_MAXCLIENTS", "77")   // over the file's 123
	t.Setenv("RLSERVER_MAX_KEY_LEN", "999") // under the flag's 60
	srv, ports := startServerOnPorts(t, false, 1, func(ports []string) []string {
		text := fmt.Sprintf("# a test configuration\nmetrics-port %s\nmaxclients 123\nmax-key-len 50\nrequirepass \"\"\n", ports[0])
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"--max-key-len", "60"}
	})
	metricsPort := ports[0]
	c := srv.Client(t, 2)
	if got := infoInt(t, c, "clients", "maxclients"); got != 77 {
		t.Errorf("maxclients %d, want 77 from RLSERVER_MAXCLIENTS", got)
	}
	if _, err := c.Do(ctx(t), "RL.SLIDING", strings.Repeat("k", 61), 10, 1000).Result(); err == nil || !strings.Contains(err.Error(), "60 bytes allowed") {
		t.Errorf("a 61-byte key: %v, want refused under --max-key-len 60", err)
	}
	info, _ := do(t, c, "INFO", "server").(string)
	if !strings.Contains(info, "config_file:"+conf+"\r\n") {
		t.Errorf("INFO server does not name the config file %s:\n%s", conf, info)
	}
	waitReady(t, "http://127.0.0.1:"+metricsPort)

	// A bad value names its setting and its source, and stops the start.
	t.Setenv("RLSERVER_MAXCLIENTS", "0")
	_, stderr, code := runBinary(t, "--in-memory", "--port", "0")
	if code != 2 || !strings.Contains(stderr, "RLSERVER_MAXCLIENTS: --maxclients 0: must be at least 1") {
		t.Errorf("RLSERVER_MAXCLIENTS=0: exit %d, stderr %q", code, stderr)
	}
}

// --log-output stdout puts the whole log on standard output, hashicorp/raft's
// lines included, and nothing on standard error; by default it is the
// other way round. (The image sets stdout: tests/image_test.go.)
func TestOperationsLogOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		output string
		// other is the stream that must stay empty, redirected to a file
		// by the shell the binary runs through; the log's stream is
		// what rlproc reads.
		other string
	}{
		{"stdout", "2"},
		{"stderr", "1"},
	} {
		t.Run(tc.output, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			other := filepath.Join(dir, "other-stream")
			srv := rlproc.Launch(t, rlproc.Config{
				Dir:   dir,
				Wrap:  []string{"sh", "-c", `exec "$@" ` + tc.other + `>"$0"`, other},
				Args:  []string{"--port", "0", "--bind", "127.0.0.1", "--log-format", "json", "--log-output", tc.output},
				Ready: regexp.MustCompile(`"msg":"rlserver ready".*"addr":"([^"]+)"`),
			})
			decide(t, srv.Client(t, 3), "RL.SLIDING out 10 60000")
			if code := srv.Stop(t); code != 0 {
				t.Errorf("exit %d after SIGTERM:\n%s", code, srv.Log())
			}
			logs := srv.Log()
			for _, want := range []string{`"msg":"rlserver ready"`, `"component":"raft`, `"msg":"stopped"`} {
				if !strings.Contains(logs, want) {
					t.Errorf("no %s on %s:\n%s", want, tc.output, logs)
				}
			}
			if b, err := os.ReadFile(other); err != nil || len(b) != 0 {
				t.Errorf("the other stream (fd %s) holds %q (%v), want nothing", tc.other, b, err)
			}
		})
	}
}

// --log-format json writes one JSON object a line, hashicorp/raft's
// election warning included, from start to a clean stop.
func TestOperationsJSONLogs(t *testing.T) {
	t.Parallel()
	srv := rlproc.Launch(t, rlproc.Config{
		Dir:   t.TempDir(),
		Args:  []string{"--port", "0", "--bind", "127.0.0.1", "--log-format", "json"},
		Ready: regexp.MustCompile(`"msg":"rlserver ready".*"addr":"([^"]+)"`),
	})
	decide(t, srv.Client(t, 3), "RL.SLIDING json 10 60000")
	if code := srv.Stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, srv.Log())
	}
	logs := srv.Log()
	var raftLines int
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		if c, _ := rec["component"].(string); strings.HasPrefix(c, "raft") {
			raftLines++
		}
	}
	if raftLines == 0 {
		t.Errorf("no hashicorp/raft line (its election warning) among the logs:\n%s", logs)
	}
	if !strings.Contains(logs, `"msg":"stopped"`) {
		t.Errorf("no stopped line:\n%s", logs)
	}
}
