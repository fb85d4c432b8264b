package chart

import "testing"

// TestExpand checks $(VAR) expansion against the kubelet's cases
// (Kubernetes' third_party/forked/golang/expansion tests).
func TestExpand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_EMPTY": "", "POD_NAME": "rl-0"}
	for _, tc := range []struct{ in, want string }{
		{"$(VAR_A)", "A"},
		{"___$(VAR_B)___", "___B___"},
		{"$(VAR_A)-$(VAR_A)", "A-A"},
		{"$(VAR_EMPTY)", ""},
		{"$(POD_NAME).rl-headless.$(UNDEFINED).svc", "rl-0.rl-headless.$(UNDEFINED).svc"},
		{"$$(VAR_A)", "$(VAR_A)"},
		{"$$$(VAR_A)", "$A"},
		{"$$$$(VAR_A)", "$$(VAR_A)"},
		{"$(VAR_A", "$(VAR_A"},
		{"$VAR_A", "$VAR_A"},
		{"$", "$"},
		{"tail$", "tail$"},
		{"$()", "$()"},
		{"no references", "no references"},
	} {
		if got := Expand(tc.in, lookupIn(vars)); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
