package rls

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// writeConfig writes files (name -> YAML) into a new directory and returns
// it.
func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadYAML loads one file of YAML.
func loadYAML(t *testing.T, body string) (*Config, error) {
	t.Helper()
	dir := writeConfig(t, map[string]string{"config.yaml": body})
	return Load(filepath.Join(dir, "config.yaml"))
}

func TestLoadRefusesBadConfigsNamingFileAndLine(t *testing.T) {
	cases := []struct {
		name, yaml string
		line       int
		msg        string
	}{
		{"empty file", "", 1, "empty"},
		{"no domain", "descriptors: []\n", 1, "no domain"},
		{"empty domain", "domain: \"\"\n", 1, "domain must not be empty"},
		{"unknown root key", "domain: d\ndescriptor: []\n", 2, `unknown key "descriptor"`},
		{"descriptor without key", "domain: d\ndescriptors:\n  - value: v\n", 3, "needs a key"},
		{"unknown descriptor key", "domain: d\ndescriptors:\n  - key: k\n    ratelimit: {}\n", 4, `unknown key "ratelimit"`},
		{"duplicate descriptor", "domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n", 5, `duplicate descriptor "k_v" (first on line 3)`},
		{"unknown unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", 5, `unknown unit "fortnight"`},
		{"no unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n", 4, "needs a unit"},
		{"unit when unlimited", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: second\n", 6, "unlimited rate_limit takes no unit"},
		{"negative requests", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n", 6, "requests_per_unit must be an integer from 0 to 4294967295"},
		{"shadow_mode inside rate_limit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      shadow_mode: true\n", 7, `"shadow_mode" belongs to the descriptor`},
		{"unit beside rate_limit", "domain: d\ndescriptors:\n  - key: k\n    unit: second\n", 4, `"unit" belongs inside rate_limit`},
		{"empty replaces", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: \"\"\n", 8, "needs a name"},
		{"replaces itself", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      name: a\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: a\n", 9, "cannot replace itself"},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n", 5, "needs a wildcard"},
		{"quota_mode", "domain: d\ndescriptors:\n  - key: k\n    quota_mode: true\n", 4, "quota_mode is not supported"},
		{"not a boolean", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", 4, `expected true or false, not "maybe"`},
		{"descriptors not a list", "domain: d\ndescriptors:\n  key: k\n", 3, "descriptors must be a list"},
		{"unknown algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: leaky\n", 7, `unknown algorithm "leaky"`},
		{"zero multiplier", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      unit_multiplier: 0\n", 7, "unit_multiplier must be an integer from 1"},
		{"window past the engine's bound", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: year\n      requests_per_unit: 1\n      unit_multiplier: 40\n", 7, "unit_multiplier must be an integer from 1 to 31"},
		{"calendar of seconds", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: calendar\n", 7, "calendar algorithm counts one day"},
		{"extension on unlimited", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      algorithm: sliding\n", 6, "takes no algorithm"},
		{"key given twice", "domain: d\ndomain: e\n", 2, `"domain" is given twice`},
		{"two documents", "domain: d\n---\ndomain: e\n", 2, "second YAML document"},
		// a quota section (quota.go)
		{"not a list", "domain: d\nquota: {bucket: {a: b}}\n", 2, "quota must be a list"},
		{"no bucket", "domain: d\nquota:\n  - rate_limit: {unit: second, requests_per_unit: 1}\n", 3, "needs a bucket"},
		{"empty bucket", "domain: d\nquota:\n  - bucket: {}\n    rate_limit: {unit: second, requests_per_unit: 1}\n", 3, "at least one key"},
		{"no rate_limit", "domain: d\nquota:\n  - bucket: {a: b}\n", 3, "needs a rate_limit"},
		{"unknown key", "domain: d\nquota:\n  - bucket: {a: b}\n    rate_limit: {unit: second, requests_per_unit: 1}\n    burst: 3\n", 5, `unknown key "burst"`},
		{"duplicate", "domain: d\nquota:\n  - bucket: {a: b}\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - bucket: {a: b}\n    rate_limit: {unit: second, requests_per_unit: 2}\n", 5, "duplicate quota bucket"},
		{"algorithm", "domain: d\nquota:\n  - bucket: {a: b}\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: sliding}\n", 4, "no algorithm"},
		{"burst over the window", "domain: d\nquota:\n  - bucket: {a: b}\n    rate_limit: {unit: second, requests_per_unit: 1}\n    burst_ms: 1001\n", 5, "burst_ms"},
		{"burst when unlimited", "domain: d\nquota:\n  - bucket: {a: b}\n    rate_limit: {unlimited: true}\n    burst_ms: 10\n", 5, "burst_ms needs a limit"},
		{"no unit", "domain: d\nquota:\n  - bucket: {a: b}\n    rate_limit: {requests_per_unit: 1}\n", 4, "needs a unit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadYAML(t, c.yaml)
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
				t.Fatalf("Load: %v, want a ConfigError", err)
			}
			if want := "config.yaml:" + strconv.Itoa(c.line); !strings.HasSuffix(ce.Where, want) {
				t.Errorf("where %q, want it to end in %q (%v)", ce.Where, want, err)
			}
			if !strings.Contains(ce.Msg, c.msg) {
				t.Errorf("message %q, want it to say %q", ce.Msg, c.msg)
			}
		})
	}
}

func TestLoadSyntaxErrorNamesFileAndLine(t *testing.T) {
	_, err := loadYAML(t, "domain: d\ndescriptors:\n  - key: k\n   bad: [\n")
	if err == nil || !strings.Contains(err.Error(), "config.yaml") || !strings.Contains(err.Error(), "line") {
		t.Fatalf("Load: %v, want the file and line of the syntax error", err)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"a.yaml":       "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		"b.yml":        "domain: b\n",
		"notes.txt":    "not a config",
		".hidden.yaml": "domain: hidden\n",
	})
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Domains() != 2 || cfg.Rules() != 1 || len(cfg.Files()) != 2 {
		t.Fatalf("domains %d rules %d files %v", cfg.Domains(), cfg.Rules(), cfg.Files())
	}
	dup := writeConfig(t, map[string]string{"a.yaml": "domain: a\n", "b.yaml": "\n\ndomain: a\n"})
	_, err = Load(dup)
	if err == nil || !strings.Contains(err.Error(), "b.yaml:3") || !strings.Contains(err.Error(), "a.yaml:1") {
		t.Fatalf("duplicate domain: %v, want both places named", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty directory: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// The rules a config defines, as read: envoyproxy/ratelimit's keys (units
// in any case, YAML 1.1 booleans) and rlserver's extensions.
func TestLoadReadsRules(t *testing.T) {
	cfg, err := loadYAML(t, `
domain: d
descriptors:
  - key: k
    value: v
    shadow_mode: yes
    detailed_metric: true
    rate_limit:
      name: the_rule
      unit: MINUTE
      requests_per_unit: 30
      replaces: [{name: other}]
  - key: sliding
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: sliding, unit_multiplier: 30, count_refused: false}
  - key: token
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: token}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 1000000, algorithm: calendar}
  - key: open
    rate_limit: {unlimited: true}
  - key: ip
    value: 10.*
    share_threshold: true
    rate_limit: {unit: day, requests_per_unit: 0}
`)
	if err != nil {
		t.Fatal(err)
	}
	root := cfg.domains["d"]
	ruleAt := func(key, value string) *rule {
		n := root.children[entry{key, value}]
		if n == nil || n.rule == nil {
			t.Fatalf("no rule at %s_%s", key, value)
		}
		return n.rule
	}
	r := ruleAt("k", "v")
	if r.Name != "the_rule" || r.Unit != pb.RateLimitResponse_RateLimit_MINUTE || r.RequestsPerUnit != 30 ||
		!r.ShadowMode || !r.DetailedMetric || r.Replaces[0] != "other" || r.StatsKey != "k_v" ||
		r.Algorithm != algoFixed || !r.CountRefused || r.Window() != 60_000 || !strings.HasSuffix(r.Where, ":8") {
		t.Errorf("k_v: %+v", r)
	}
	if r := ruleAt("sliding", ""); r.Algorithm != algoSliding || r.Window() != 30_000 || r.CountRefused {
		t.Errorf("sliding: %+v", r)
	}
	if r := ruleAt("token", ""); r.Algorithm != algoToken || r.CountRefused {
		t.Errorf("token: a bucket does not count refusals by default: %+v", r)
	}
	if r := ruleAt("month", ""); r.Algorithm != algoCalendar || !r.CountRefused {
		t.Errorf("month: %+v", r)
	}
	if r := ruleAt("open", ""); !r.Unlimited {
		t.Errorf("open: %+v", r)
	}
	if r := ruleAt("ip", "10.*"); r.RequestsPerUnit != 0 || r.StatsKey != "ip_10.*" || len(root.wildcards) != 1 || !root.wildcards[0].node.shareThreshold {
		t.Errorf("ip: %+v", r)
	}
	if cfg.Rules() != 6 {
		t.Errorf("rules %d", cfg.Rules())
	}
}
