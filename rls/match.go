package rls

import (
	"strings"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// A request's descriptor is matched against its domain's tree entry by
// entry, as envoyproxy/ratelimit matches it: at each level an entry finds
// the child of its key and value, else the first wildcard child of its key
// whose prefix the value has, else the child of its key alone (any value).
// The descriptor is limited by the rule of the level its last entry reaches;
// it is unlimited by the config (OK, uncounted) when an entry finds no child,
// when the level it ends on has no rate_limit, or when it has more entries
// than the tree has levels below.
//
// Where envoyproxy/ratelimit joins key and value with "_" to look them up,
// rlserver compares them as a pair, so key "a_b" with value "c" does not
// match key "a" with value "b_c".

// match is what one descriptor matched.
type match struct {
	rule *rule // nil: not limited by the config
	// shared are the entries a share_threshold wildcard matched: their
	// values share one counter, named by the pattern.
	shared []sharedValue
	// metricKey is the stats key when it names request values
	// (detailed_metric, value_to_metric); "" for the rule's own.
	metricKey string
}

// sharedValue is an entry counted under a wildcard's pattern.
type sharedValue struct {
	index   int
	pattern string
}

// how says how an entry found its child.
type how uint8

const (
	byValue    how = iota // the key and the value
	byWildcard            // a wildcard value's prefix
	byDefault             // the key alone
)

// lookup finds the child an entry matches, and how.
func (n *node) lookup(key, value string) (*node, how) {
	if c, ok := n.children[entry{key, value}]; ok {
		return c, byValue
	}
	for _, w := range n.wildcards {
		if w.key == key && strings.HasPrefix(value, w.prefix) {
			return w.node, byWildcard
		}
	}
	if c, ok := n.children[entry{key, ""}]; ok {
		return c, byDefault
	}
	return nil, byDefault
}

// match finds the rule of a descriptor's entries in a known domain's tree.
func (root *node) match(entries []*rlpb.RateLimitDescriptor_Entry) match {
	var m match
	level, named := root, false
	for i, e := range entries {
		next, how := level.lookup(e.GetKey(), e.GetValue())
		if next == nil {
			break
		}
		if how == byWildcard && next.shareThreshold {
			m.shared = append(m.shared, sharedValue{index: i, pattern: next.pattern})
		}
		named = named || next.valueToMetric
		if next.rule != nil && i == len(entries)-1 {
			m.rule = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		level = next
	}
	if m.rule != nil && (m.rule.DetailedMetric || named) {
		m.metricKey = metricKey(root, entries, m.rule.DetailedMetric)
	}
	return m
}

// metricKey is the stats key of a descriptor that names its values: every
// entry's key_value with detailed_metric (share_threshold's entries by
// their pattern); with value_to_metric, the config's path with the
// request's value at the levels that ask for it.
func metricKey(root *node, entries []*rlpb.RateLimitDescriptor_Entry, detailed bool) string {
	var b strings.Builder
	level := root
	for i, e := range entries {
		next, how := level.lookup(e.GetKey(), e.GetValue())
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.GetKey())
		value := e.GetValue()
		switch {
		case next == nil:
			value = ""
		case how == byWildcard && next.shareThreshold:
			value = next.pattern
		case detailed || next.valueToMetric:
		case how == byWildcard:
			value = next.pattern
		case how == byDefault:
			value = ""
		}
		if value != "" || detailed {
			b.WriteByte('_')
			b.WriteString(value)
		}
		if next == nil {
			continue
		}
		level = next
	}
	return b.String()
}
