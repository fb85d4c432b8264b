package rls

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"

	"github.com/rlserver/rlserver/engine"
)

// A config file is checked node by node, so that every fault names its
// line: an unknown or misplaced key, a value of the wrong type, a unit
// envoyproxy/ratelimit does not know, parameters the engine refuses.
// Keys and values are envoyproxy/ratelimit's, read as its YAML library
// reads them (a boolean may be yes or on; a number may stand for a string
// value); a key it would ignore where it stands is refused here instead,
// since a shadow_mode written inside rate_limit means the author believes
// the rule is in shadow mode.

// domainTree is one file's domain.
type domainTree struct {
	name  string
	where string // file:line of the domain key
	root  *node
	rules int
	quota []*quotaRule // its quota section, in file order (quota.go)
}

// The keys of each kind of mapping, and what they mean.
var (
	rootKeys       = []string{"domain", "descriptors", "quota"}
	descriptorKeys = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric",
		"value_to_metric", "share_threshold", "quota_mode"}
	rateLimitKeys = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces",
		"algorithm", "unit_multiplier", "count_refused"}
)

// fileParser reads one file's nodes. The same checks read a RateLimitConfig
// received over xDS, made into nodes (xds_config.go): there place names a
// node by its path in the resource instead of by its line.
type fileParser struct {
	file   string
	domain string
	rules  int
	// place, when set, names a node's place in a message; nil for
	// file:line.
	place func(n *yaml.Node) string
	// earlier, when set, names where an earlier node is, for a message
	// about a duplicate ("at descriptors[0]"); nil for "on line N".
	earlier func(n *yaml.Node) string
}

// parseFile reads one config file: one YAML document holding one domain.
func parseFile(file string, data []byte) (*domainTree, error) {
	p := &fileParser{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ConfigError{Where: file + ":1", Msg: "the file is empty: it must define a domain"}
		}
		return nil, &ConfigError{Where: file, Msg: err.Error()}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, &ConfigError{Where: file, Msg: err.Error()}
		}
		return nil, p.fail(&more, "a second YAML document: a config file holds one domain")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return p.domainTree(root, "the file")
}

// domainTree checks a domain's root mapping (what names it in messages)
// and builds its tree.
func (p *fileParser) domainTree(root *yaml.Node, what string) (*domainTree, error) {
	fields, err := p.mapping(root, what, rootKeys, nil)
	if err != nil {
		return nil, err
	}
	d := &domainTree{root: newNode()}
	keyNode, ok := fields["domain"]
	if !ok {
		return nil, p.fail(root, "no domain: %s must name its domain", what)
	}
	if d.name, err = p.str(keyNode.value); err != nil {
		return nil, err
	}
	if d.name == "" {
		return nil, p.fail(keyNode.value, "the domain must not be empty")
	}
	p.domain, d.where = d.name, p.at(keyNode.key)
	if list, ok := fields["descriptors"]; ok {
		if err := p.descriptors(d.root, "", list.value); err != nil {
			return nil, err
		}
	}
	d.rules = p.rules
	if list, ok := fields["quota"]; ok {
		if d.quota, err = p.quota(list.value); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func newNode() *node { return &node{children: map[entry]*node{}} }

// field is one key of a mapping and its value.
type field struct{ key, value *yaml.Node }

// mapping returns the fields of a mapping node, refusing a key not in
// known, a key given twice, and a key that belongs elsewhere (misplaced
// names where it does).
func (p *fileParser) mapping(n *yaml.Node, what string, known []string, misplaced map[string]string) (map[string]field, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.fail(n, "%s must be a mapping of keys to values", what)
	}
	out := make(map[string]field, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.fail(k, "a key must be a plain name")
		}
		if prev, dup := out[k.Value]; dup {
			return nil, p.fail(k, "%q is given twice in %s (first %s)", k.Value, what, p.before(prev.key))
		}
		if !slices.Contains(known, k.Value) {
			if where, ok := misplaced[k.Value]; ok {
				return nil, p.fail(k, "%q belongs %s (envoyproxy/ratelimit would ignore it here)", k.Value, where)
			}
			return nil, p.fail(k, "unknown key %q in %s (known: %s)", k.Value, what, strings.Join(known, ", "))
		}
		out[k.Value] = field{key: k, value: v}
	}
	return out, nil
}

// descriptors loads a list of descriptors into parent; path is the stats
// key of parent ("" for the domain).
func (p *fileParser) descriptors(parent *node, path string, list *yaml.Node) error {
	list = resolve(list)
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		return p.fail(list, "descriptors must be a list")
	}
	first := map[entry]*yaml.Node{}
	for _, item := range list.Content {
		misplaced := map[string]string{}
		for _, k := range rateLimitKeys {
			misplaced[k] = "inside rate_limit"
		}
		f, err := p.mapping(item, "a descriptor", descriptorKeys, misplaced)
		if err != nil {
			return err
		}
		var e entry
		if kf, ok := f["key"]; !ok {
			return p.fail(item, "a descriptor needs a key")
		} else if e.key, err = p.str(kf.value); err != nil {
			return err
		} else if e.key == "" {
			return p.fail(kf.value, "a descriptor's key must not be empty")
		}
		if vf, ok := f["value"]; ok {
			if e.value, err = p.str(vf.value); err != nil {
				return err
			}
		}
		name := e.key
		if e.value != "" {
			name += "_" + e.value
		}
		if prev, dup := first[e]; dup {
			return p.fail(item, "duplicate descriptor %q (first %s)", name, p.before(prev))
		}
		first[e] = resolve(item)
		child := newNode()
		key := name
		if path != "" {
			key = path + "." + name
		}
		if err := p.flags(child, f, e); err != nil {
			return err
		}
		if rl, ok := f["rate_limit"]; ok {
			if child.rule, err = p.rateLimit(rl, key, f); err != nil {
				return err
			}
		}
		if strings.HasSuffix(e.value, "*") {
			parent.wildcards = append(parent.wildcards, wildcard{key: e.key, prefix: strings.TrimSuffix(e.value, "*"), node: child})
			child.pattern = e.value
		}
		parent.children[e] = child
		if sub, ok := f["descriptors"]; ok {
			if err := p.descriptors(child, key, sub.value); err != nil {
				return err
			}
		}
	}
	return nil
}

// flags reads a descriptor's switches onto its node.
func (p *fileParser) flags(n *node, f map[string]field, e entry) error {
	var err error
	if qf, ok := f["quota_mode"]; ok {
		return p.fail(qf.key, "quota_mode is not supported by rlserver: shadow_mode answers OK while counting")
	}
	if sf, ok := f["share_threshold"]; ok {
		if n.shareThreshold, err = p.bool(sf.value); err != nil {
			return err
		}
		if n.shareThreshold && !strings.HasSuffix(e.value, "*") {
			return p.fail(sf.key, "share_threshold needs a wildcard value (ending in *), not %q", e.value)
		}
	}
	for _, k := range []string{"shadow_mode", "detailed_metric"} { // read by rateLimit; checked here, even without one
		if bf, ok := f[k]; ok {
			if _, err := p.bool(bf.value); err != nil {
				return err
			}
		}
	}
	if vf, ok := f["value_to_metric"]; ok {
		if n.valueToMetric, err = p.bool(vf.value); err != nil {
			return err
		}
	}
	return nil
}

// rateLimit reads a descriptor's rate_limit; key is the rule's stats key,
// d the descriptor's fields (shadow_mode and detailed_metric are there).
func (p *fileParser) rateLimit(rl field, key string, d map[string]field) (*rule, error) {
	misplaced := map[string]string{}
	for _, k := range descriptorKeys {
		misplaced[k] = "to the descriptor, beside rate_limit"
	}
	f, err := p.mapping(rl.value, "rate_limit", rateLimitKeys, misplaced)
	if err != nil {
		return nil, err
	}
	r := &rule{Domain: p.domain, StatsKey: key, Where: p.at(rl.key), Multiplier: 1}
	p.rules++
	for _, s := range []struct {
		name string
		dst  *bool
		f    map[string]field
	}{{"unlimited", &r.Unlimited, f}, {"shadow_mode", &r.ShadowMode, d}, {"detailed_metric", &r.DetailedMetric, d}} {
		if v, ok := s.f[s.name]; ok {
			if *s.dst, err = p.bool(v.value); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := f["name"]; ok {
		if r.Name, err = p.str(v.value); err != nil {
			return nil, err
		}
	}
	if v, ok := f["requests_per_unit"]; ok {
		n, err := p.int(v.value, 0, 1<<32-1, "requests_per_unit")
		if err != nil {
			return nil, err
		}
		r.RequestsPerUnit = uint32(n)
	}
	if err := p.replaces(r, f); err != nil {
		return nil, err
	}
	uf, hasUnit := f["unit"]
	if hasUnit {
		s, err := p.str(uf.value)
		if err != nil {
			return nil, err
		}
		u, ok := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(s)]
		if !ok || u == int32(pb.RateLimitResponse_RateLimit_UNKNOWN) {
			return nil, p.fail(uf.value, "unknown unit %q: second, minute, hour, day, week, month or year", s)
		}
		r.Unit = pb.RateLimitResponse_RateLimit_Unit(u)
	}
	if r.Unlimited {
		for _, k := range []string{"unit", "algorithm", "unit_multiplier", "count_refused"} {
			if v, ok := f[k]; ok {
				return nil, p.fail(v.key, "an unlimited rate_limit takes no %s", k)
			}
		}
		return r, nil
	}
	if !hasUnit {
		return nil, p.fail(rl.key, "rate_limit needs a unit (second, minute, hour, day, week, month or year), or unlimited: true")
	}
	if err := p.extensions(r, f); err != nil {
		return nil, err
	}
	if r.RequestsPerUnit > 0 {
		c := ruleCommand(r, 1)
		if err := c.Check(); err != nil {
			return nil, p.fail(rl.key, "the engine refuses this limit: %v", err)
		}
	}
	return r.finish(), nil
}

// replaces reads the names a rule replaces.
func (p *fileParser) replaces(r *rule, f map[string]field) error {
	v, ok := f["replaces"]
	if !ok {
		return nil
	}
	list := resolve(v.value)
	if list.Kind != yaml.SequenceNode {
		return p.fail(list, "replaces must be a list of {name: ...}")
	}
	for _, item := range list.Content {
		rf, err := p.mapping(item, "a replaces entry", []string{"name"}, nil)
		if err != nil {
			return err
		}
		nf, ok := rf["name"]
		name := ""
		if ok {
			if name, err = p.str(nf.value); err != nil {
				return err
			}
		}
		switch {
		case name == "":
			return p.fail(item, "a replaces entry needs a name")
		case name == r.Name:
			return p.fail(item, "a rate_limit cannot replace itself (%q)", name)
		}
		r.Replaces = append(r.Replaces, name)
	}
	return nil
}

// extensions reads rlserver's own keys of a rate_limit: algorithm,
// unit_multiplier and count_refused.
func (p *fileParser) extensions(r *rule, f map[string]field) error {
	if v, ok := f["algorithm"]; ok {
		s, err := p.str(v.value)
		if err != nil {
			return err
		}
		i := slices.Index(algorithmNames, s)
		if i < 0 {
			return p.fail(v.value, "unknown algorithm %q: %s", s, strings.Join(algorithmNames, ", "))
		}
		r.Algorithm = algorithm(i)
	}
	if v, ok := f["unit_multiplier"]; ok {
		n, err := p.int(v.value, 1, engine.MaxDuration/unitMillis[r.Unit], "unit_multiplier")
		if err != nil {
			return err
		}
		r.Multiplier = n
	}
	if r.Algorithm.countsPeriods() {
		if _, ok := calendarPeriod(r.Unit); !ok || r.Multiplier != 1 {
			return p.fail(f["algorithm"].value, "the %s algorithm counts one day, week, month or year: not %d %s", r.Algorithm, r.Multiplier, strings.ToLower(r.Unit.String()))
		}
	}
	r.CountRefused = r.Algorithm.countsRefusals()
	if v, ok := f["count_refused"]; ok {
		b, err := p.bool(v.value)
		if err != nil {
			return err
		}
		r.CountRefused = b
	}
	return nil
}

// str reads a scalar as text: a number or a boolean stands for its text,
// as envoyproxy/ratelimit reads values; null is "".
func (p *fileParser) str(n *yaml.Node) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		return "", p.fail(n, "expected a plain value, not a list or a mapping")
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

// bool reads a boolean: true or false, or YAML 1.1's yes, no, on, off.
func (p *fileParser) bool(n *yaml.Node) (bool, error) {
	s, err := p.str(n)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on", "y":
		return true, nil
	case "false", "no", "off", "n", "":
		return false, nil
	}
	return false, p.fail(n, "expected true or false, not %q", s)
}

// int reads an integer within [lo, hi].
func (p *fileParser) int(n *yaml.Node, lo, hi int64, what string) (int64, error) {
	s, err := p.str(n)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, p.fail(n, "%s must be an integer from %d to %d, not %q", what, lo, hi, s)
	}
	return v, nil
}

// resolve follows an alias (*name) to its anchor's node.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// at is n's place: file:line, or what place says.
func (p *fileParser) at(n *yaml.Node) string {
	if p.place != nil {
		return p.place(n)
	}
	return p.file + ":" + strconv.Itoa(n.Line)
}

// before names where an earlier node n is: "on line N", or what earlier
// says.
func (p *fileParser) before(n *yaml.Node) string {
	if p.earlier != nil {
		return p.earlier(n)
	}
	return "on line " + strconv.Itoa(n.Line)
}

// fail is a ConfigError at n.
func (p *fileParser) fail(n *yaml.Node, format string, args ...any) error {
	return &ConfigError{Where: p.at(n), Msg: fmt.Sprintf(format, args...)}
}
