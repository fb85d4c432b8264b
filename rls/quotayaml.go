package rls

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rlserver/rlserver/engine"
)

// A domain's quota section is read as its descriptors are: node by node,
// every fault naming its line (see quota.go for what it means).

// quotaKeys are the keys of a quota entry.
var quotaKeys = []string{"bucket", "rate_limit", "burst_ms"}

// quotaRefused are the keys of a rate_limit that mean nothing to a quota
// bucket, and why: Envoy enforces the token bucket it is assigned.
var quotaRefused = map[string]string{
	"algorithm":     "Envoy enforces a token bucket of its share: a quota bucket has no algorithm",
	"count_refused": "a quota bucket's holders report refused requests as demand, never as spent",
	"replaces":      "a request falls in one quota bucket: there is nothing to replace",
}

// quota reads a domain's quota section.
func (p *fileParser) quota(list *yaml.Node) ([]*quotaRule, error) {
	list = resolve(list)
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, p.fail(list, "quota must be a list of {bucket, rate_limit}")
	}
	first := map[string]int{} // a bucket's canonical form -> its line
	var out []*quotaRule
	for _, item := range list.Content {
		f, err := p.mapping(item, "a quota entry", quotaKeys, nil)
		if err != nil {
			return nil, err
		}
		bf, ok := f["bucket"]
		if !ok {
			return nil, p.fail(item, "a quota entry needs a bucket: the keys and values of Envoy's bucket id")
		}
		q := &quotaRule{}
		if q.bucket, err = p.quotaBucket(bf.value); err != nil {
			return nil, err
		}
		name := bucketName(q.bucket)
		if line, dup := first[name]; dup {
			return nil, p.fail(item, "duplicate quota bucket {%s} (first on line %d)", name, line)
		}
		first[name] = resolve(item).Line
		rl, ok := f["rate_limit"]
		if !ok {
			return nil, p.fail(item, "a quota entry needs a rate_limit")
		}
		if q.rule, err = p.quotaLimit(rl, name); err != nil {
			return nil, err
		}
		if err := p.quotaBurst(q, f); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// quotaBucket reads a quota entry's bucket: a mapping of keys to values,
// a value ending in "*" taking any value with its prefix.
func (p *fileParser) quotaBucket(n *yaml.Node) ([]quotaEntry, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return nil, p.fail(n, "bucket must be a mapping of the bucket id's keys to their values, with at least one key")
	}
	var out []quotaEntry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.str(n.Content[i])
		if err != nil {
			return nil, err
		}
		if k == "" {
			return nil, p.fail(n.Content[i], "a bucket's key must not be empty")
		}
		if slices.ContainsFunc(out, func(e quotaEntry) bool { return e.key == k }) {
			return nil, p.fail(n.Content[i], "%q is given twice in the bucket", k)
		}
		v, err := p.str(n.Content[i+1])
		if err != nil {
			return nil, err
		}
		e := quotaEntry{key: k, value: v}
		if strings.HasSuffix(v, "*") {
			e.value, e.prefix = strings.TrimSuffix(v, "*"), true
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b quotaEntry) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

// bucketName is a quota entry's bucket as its faults name it: key: value
// pairs, sorted by key.
func bucketName(bucket []quotaEntry) string {
	var b strings.Builder
	for i, e := range bucket {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.key + ": " + e.value)
		if e.prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// quotaLimit reads a quota entry's rate_limit as a descriptor's is read,
// refusing the keys that mean nothing to a quota bucket. It is not counted
// among the config's rules: those are the rate limit service's.
func (p *fileParser) quotaLimit(rl field, name string) (*rule, error) {
	if m := resolve(rl.value); m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if why, refused := quotaRefused[resolve(m.Content[i]).Value]; refused {
				return nil, p.fail(m.Content[i], "%q in a quota entry's rate_limit: %s", m.Content[i].Value, why)
			}
		}
	}
	rules := p.rules
	r, err := p.rateLimit(rl, "quota."+name, nil)
	p.rules = rules
	return r, err
}

// quotaBurst reads a quota entry's burst_ms, and checks the RL.SHARE its
// bucket asks with.
func (p *fileParser) quotaBurst(q *quotaRule, f map[string]field) error {
	r := q.rule
	if r.Unlimited || r.RequestsPerUnit == 0 {
		if bf, ok := f["burst_ms"]; ok {
			return p.fail(bf.key, "burst_ms needs a limit: this bucket is always allowed or always refused")
		}
		return nil
	}
	q.burstMs = min(engine.DefaultShareBurst, r.Window())
	if bf, ok := f["burst_ms"]; ok {
		n, err := p.int(bf.value, 0, r.Window(), "burst_ms (at most the window, in ms)")
		if err != nil {
			return err
		}
		q.burstMs = n
	}
	req := q.shareRequest([]byte("h"), engine.UnknownDemand, engine.DefaultShareTTL, 0)
	if err := req.Command([]byte("k")).Check(); err != nil {
		return p.fail(f["rate_limit"].key, "the engine refuses this quota: %v", err)
	}
	return nil
}
