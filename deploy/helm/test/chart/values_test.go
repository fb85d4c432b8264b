package chart

import (
	"strings"
	"testing"
)

// TestValuesRefused checks that values which cannot work stop helm, with
// a message that says why, rather than render a cluster that fails at
// start (or, for replicas 0, one whose pods would all leave it).
func TestValuesRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, values, says string
	}{
		{"a misspelt key", "replica: 5", "additional properties 'replica' not allowed"},
		{"no replicas", "replicas: 0", "minimum"},
		{"shards beyond 1024", "shards: 2000", "maximum"},
		{"password and aclfile", "auth: {passwordSecret: a, aclfileSecret: b}", "exclude each other"},
		{"TLS without its Secret", "tls: {enabled: true}", "tls.enabled needs tls.secret"},
		{"bus TLS without TLS", "tls: {cluster: true}", "tls.cluster needs tls.enabled"},
		{"TLS clients yes or no", "tls: {enabled: true, secret: s, authClients: maybe}", "authClients"},
		{"rls without limits", "rls: {enabled: true}", "rls.enabled needs its limits"},
		{"a limits file rlserver skips", "rls: {enabled: true, config: {edge.conf: 'domain: edge'}}", "does not match pattern"},
		{"two ports alike", "ports: {metrics: 6380}", "ports must differ"},
		{"leave timeout out of range", "fleet: {leaveTimeoutSeconds: 0}", "minimum"},
		{"an extra arg that is not a flag", "extraArgs: [2gb]", "does not match pattern"},
		{"a pull policy", "image: {pullPolicy: Sometimes}", "pullPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := template(t, Release{Values: tc.values})
			if err == nil {
				t.Fatalf("%s: rendered", tc.values)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: refused, but not saying %q:\n%v", tc.values, tc.says, err)
			}
		})
	}
}
