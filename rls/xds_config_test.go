package rls

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
)

// dumpTree writes a config's trees in a canonical form: every level's
// entries in order, with its rule and switches; a rule's Where is left out
// (a file's line, a resource's path).
func dumpTree(c *Config) string {
	var b strings.Builder
	domains := make([]string, 0, len(c.domains))
	for d := range c.domains {
		domains = append(domains, d)
	}
	slices.Sort(domains)
	var walk func(n *node, indent string)
	walk = func(n *node, indent string) {
		if r := n.rule; r != nil {
			fmt.Fprintf(&b, "%srule %s %q %d %v x%d unl=%v repl=%v shadow=%v detailed=%v %v refused=%v\n", indent,
				r.StatsKey, r.Name, r.RequestsPerUnit, r.Unit, r.Multiplier, r.Unlimited, r.Replaces, r.ShadowMode,
				r.DetailedMetric, r.Algorithm, r.CountRefused)
		}
		fmt.Fprintf(&b, "%sshare=%v pattern=%q vtm=%v wildcards=%d\n", indent, n.shareThreshold, n.pattern, n.valueToMetric, len(n.wildcards))
		keys := make([]entry, 0, len(n.children))
		for e := range n.children {
			keys = append(keys, e)
		}
		slices.SortFunc(keys, func(a, b entry) int { return strings.Compare(a.key+"\x00"+a.value, b.key+"\x00"+b.value) })
		for _, e := range keys {
			fmt.Fprintf(&b, "%s%s=%s\n", indent, e.key, e.value)
			walk(n.children[e], indent+"  ")
		}
	}
	for _, d := range domains {
		fmt.Fprintf(&b, "domain %s\n", d)
		walk(c.domains[d], "  ")
	}
	fmt.Fprintf(&b, "rules %d\n", c.rules)
	return b.String()
}

// rlDesc is a RateLimitConfig descriptor of key and value, limited by rl
// (nil: none), with children.
func rlDesc(key, value string, rl *rlsconf.RateLimitPolicy, children ...*rlsconf.RateLimitDescriptor) *rlsconf.RateLimitDescriptor {
	return &rlsconf.RateLimitDescriptor{Key: key, Value: value, RateLimit: rl, Descriptors: children}
}

// perUnit is a RateLimitPolicy of n a unit.
func perUnit(n uint32, unit rlsconf.RateLimitUnit) *rlsconf.RateLimitPolicy {
	return &rlsconf.RateLimitPolicy{RequestsPerUnit: n, Unit: unit}
}

// A RateLimitConfig resource gives the same tree, rules and counters' names
// as the YAML file that says the same: envoyproxy/ratelimit's README
// examples 2, 3, 5, 6 and 7, in two resources each holding domains of
// their own.
func TestLoadXDSMatchesYAML(t *testing.T) {
	yamlCfg, err := Load(writeConfig(t, map[string]string{
		"messaging.yaml": `domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit: {unit: day, requests_per_unit: 5}
  - key: to_number
    rate_limit: {unit: day, requests_per_unit: 100}
  - key: remote_address
    value: 50.0.0.5
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: ldap
    rate_limit: {unlimited: true}
  - key: files
    value: "img*"
    detailed_metric: true
    rate_limit: {unit: month, requests_per_unit: 7}
`,
		"example.yaml": `domain: example
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        shadow_mode: true
        rate_limit: {requests_per_unit: 10, unit: second}
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit: {name: specific_limit, requests_per_unit: 5, unit: week}
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces: [{name: specific_limit}]
          unit: year
          requests_per_unit: 1
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	shadow := rlDesc("user", "user-a", perUnit(10, rlsconf.RateLimitUnit_SECOND))
	shadow.ShadowMode = true
	detailed := rlDesc("files", "img*", perUnit(7, rlsconf.RateLimitUnit_MONTH))
	detailed.DetailedMetric = true
	named := perUnit(5, rlsconf.RateLimitUnit_WEEK)
	named.Name = "specific_limit"
	replacing := perUnit(1, rlsconf.RateLimitUnit_YEAR)
	replacing.Replaces = []*rlsconf.RateLimitReplace{{Name: "specific_limit"}}
	xdsCfg, err := LoadXDS([]*rlsconf.RateLimitConfig{
		{Name: "messaging", Domain: "messaging", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("message_type", "marketing", nil, rlDesc("to_number", "", perUnit(5, rlsconf.RateLimitUnit_DAY))),
			rlDesc("to_number", "", perUnit(100, rlsconf.RateLimitUnit_DAY)),
			rlDesc("remote_address", "50.0.0.5", perUnit(0, rlsconf.RateLimitUnit_SECOND)),
			rlDesc("ldap", "", &rlsconf.RateLimitPolicy{Unlimited: true}),
			detailed,
		}},
		{Name: "example", Domain: "example", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("service", "", nil, shadow),
			rlDesc("key_1", "value_1", nil, rlDesc("user", "bkthomps", named)),
			rlDesc("key_2", "value_2", nil, rlDesc("user", "bkthomps", replacing)),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dumpTree(xdsCfg), dumpTree(yamlCfg); got != want {
		t.Fatalf("the xDS config differs from the YAML's:\n%s\nwant\n%s", got, want)
	}
	if xdsCfg.Domains() != 2 || xdsCfg.Rules() != 8 || len(xdsCfg.Files()) != 0 {
		t.Fatalf("domains %d rules %d files %v", xdsCfg.Domains(), xdsCfg.Rules(), xdsCfg.Files())
	}
	if r := xdsCfg.domains["example"].children[entry{"key_1", "value_1"}].children[entry{"user", "bkthomps"}].rule; r.Where != `RateLimitConfig "example" at descriptors[1].descriptors[0].rate_limit` {
		t.Errorf("a rule's Where: %q", r.Where)
	}
	if empty, err := LoadXDS(nil); err != nil || empty.Domains() != 0 {
		t.Fatalf("no resources: %v, %v", empty, err)
	}
}

// A resource the YAML's checks refuse is refused with the same words, named
// by the resource and the field's path.
func TestLoadXDSRefusesNamingResourceAndField(t *testing.T) {
	unlimitedWithUnit := &rlsconf.RateLimitPolicy{Unlimited: true, Unit: rlsconf.RateLimitUnit_SECOND}
	quota := rlDesc("k", "", perUnit(1, rlsconf.RateLimitUnit_SECOND))
	quota.QuotaMode = true
	cases := []struct {
		name  string
		res   []*rlsconf.RateLimitConfig
		where string
		msg   string
	}{
		{"empty domain", []*rlsconf.RateLimitConfig{{Name: "r"}}, `RateLimitConfig "r" at domain`, "the domain must not be empty"},
		{"empty key", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{rlDesc("", "", nil)}}},
			`RateLimitConfig "r" at descriptors[0].key`, "a descriptor's key must not be empty"},
		{"no unit", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("a", "", nil), rlDesc("k", "", perUnit(5, rlsconf.RateLimitUnit_UNKNOWN))}}},
			`RateLimitConfig "r" at descriptors[1].rate_limit`, "rate_limit needs a unit"},
		{"a unit the enum does not name", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("k", "", perUnit(5, rlsconf.RateLimitUnit(42)))}}},
			`RateLimitConfig "r" at descriptors[0].rate_limit.unit`, `unknown unit "42"`},
		{"unlimited with a unit", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("k", "", unlimitedWithUnit)}}},
			`RateLimitConfig "r" at descriptors[0].rate_limit.unit`, "an unlimited rate_limit takes no unit"},
		{"duplicate descriptor", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("k", "v", nil, rlDesc("a", "", nil), rlDesc("a", "", nil))}}},
			`RateLimitConfig "r" at descriptors[0].descriptors[1]`, `duplicate descriptor "a" (first at descriptors[0].descriptors[0])`},
		{"replaces without a name", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{
			rlDesc("k", "", &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_SECOND, Replaces: []*rlsconf.RateLimitReplace{{}}})}}},
			`RateLimitConfig "r" at descriptors[0].rate_limit.replaces[0]`, "a replaces entry needs a name"},
		{"quota_mode", []*rlsconf.RateLimitConfig{{Name: "r", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{quota}}},
			`RateLimitConfig "r" at descriptors[0].quota_mode`, "quota_mode is not supported"},
		{"duplicate domain", []*rlsconf.RateLimitConfig{{Name: "one", Domain: "d"}, {Name: "two", Domain: "d"}},
			`RateLimitConfig "two" at domain`, `duplicate domain "d": already defined at RateLimitConfig "one" at domain`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadXDS(c.res)
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v, want a *ConfigError", err)
			}
			if ce.Where != c.where || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("error %q\nwant at %q: ...%s...", err, c.where, c.msg)
			}
		})
	}
}
