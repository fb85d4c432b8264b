package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// End-to-end tests of the commands of issue 5: RL.ALL, RL.ACQUIRE and
// RL.RELEASE, RL.QUOTA, RL.SHAPE, refunds (negative COST), PARTIAL,
// policies (RL.POLICY, RL.CHECK, shadow mode), and Redis's string commands
// as limiters written for Redis use them (features_*_test.go; this file has
// the helpers that read their replies). Every test fixes the clock with
// DEBUG CLOCK SET, so the expected numbers follow from the definitions in
// docs/algorithms.md.

// ext is a decision reply with the fields it has beyond the common five.
type ext struct {
	decision
	extra []int64 // in reply order
}

// parseExt reads a decision reply whose extra fields are names, in this
// order: RESP2 sends them as integers after the five, RESP3 as map entries
// of those names. The reply must have exactly these fields.
func parseExt(v any, names ...string) (ext, error) {
	var r ext
	switch m := v.(type) {
	case []any:
		if len(m) != 5+len(names) {
			return r, fmt.Errorf("array of %d elements, want %d (extra fields %v): %v", len(m), 5+len(names), names, m)
		}
		d, err := parseDecision(m[:5])
		if err != nil {
			return r, err
		}
		r.decision = d
		for i, e := range m[5:] {
			x, ok := e.(int64)
			if !ok {
				return r, fmt.Errorf("%s is %T, want int64: %v", names[i], e, m)
			}
			r.extra = append(r.extra, x)
		}
	case map[any]any:
		if len(m) != 5+len(names) {
			return r, fmt.Errorf("map of %d pairs, want %d (extra fields %v): %v", len(m), 5+len(names), names, m)
		}
		common := map[any]any{}
		for _, f := range decisionFields {
			common[f] = m[f]
		}
		d, err := parseDecision(common)
		if err != nil {
			return r, err
		}
		r.decision = d
		for _, n := range names {
			x, ok := m[n].(int64)
			if !ok {
				return r, fmt.Errorf("field %q is %T, want int64: %v", n, m[n], m)
			}
			r.extra = append(r.extra, x)
		}
	default:
		return r, fmt.Errorf("reply is %T, want an array or a map: %v", v, v)
	}
	return r, nil
}

// decideExt sends a decision command whose reply has the named extra fields
// and returns the decision and their values.
func decideExt(t testing.TB, c doer, command string, names ...string) (decision, []int64) {
	t.Helper()
	r, err := parseExt(do(t, c, words(command)...), names...)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return r.decision, r.extra
}

// expectExt sends command and checks the decision and its extra fields.
func expectExt(t testing.TB, c doer, command string, want decision, names []string, extra ...int64) {
	t.Helper()
	d, got := decideExt(t, c, command, names...)
	if d != want || !slices.Equal(got, extra) {
		t.Errorf("%s = %v %s=%v, want %v %v", command, d, strings.Join(names, ","), got, want, extra)
	}
}

// decideAll sends an RL.ALL and returns its overall decision and the
// replies of its limits (each with no extra field).
func decideAll(t testing.TB, c doer, command string) (decision, []decision) {
	t.Helper()
	a, ok := do(t, c, words(command)...).([]any)
	if !ok || len(a) < 2 {
		t.Fatalf("%s: reply %v, want an array of the overall decision and one reply per limit", command, a)
	}
	var ds []decision
	for i, e := range a {
		d, err := parseDecision(commonFields(e)) // extra fields are checked elsewhere
		if err != nil {
			t.Fatalf("%s: element %d: %v", command, i, err)
		}
		ds = append(ds, d)
	}
	return ds[0], ds[1:]
}

// commonFields is the five common fields of a decision reply, without the
// extra fields some limits add (a POLICY limit's shadow_denied).
func commonFields(v any) any {
	switch r := v.(type) {
	case []any:
		return r[:min(len(r), 5)]
	case map[any]any:
		common := map[any]any{}
		for _, f := range decisionFields {
			common[f] = r[f]
		}
		return common
	}
	return v
}

// expectAll checks an RL.ALL reply: the overall decision, then each limit's.
func expectAll(t testing.TB, c doer, command string, overall decision, limits ...decision) {
	t.Helper()
	o, got := decideAll(t, c, command)
	if o != overall || !slices.Equal(got, limits) {
		t.Errorf("%s =\n  %v %v\nwant\n  %v %v", command, o, got, overall, limits)
	}
}

// infoText returns INFO section's lines, without the CRLFs.
func infoText(t testing.TB, c doer, section string) []string {
	t.Helper()
	text, ok := do(t, c, "INFO", section).(string)
	if !ok {
		t.Fatalf("INFO %s is not a string", section)
	}
	return strings.Split(strings.TrimRight(text, "\r\n"), "\r\n")
}

const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
