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
		{"xds and limits files", "rls: {enabled: true, xds: {server: 'eg:18001', tls: {secret: s}}, config: {edge.yaml: 'domain: edge'}}", "exclude each other"},
		{"xds and a limits ConfigMap", "rls: {enabled: true, xds: {server: 'eg:18001', tls: {secret: s}}, configMap: mine}", "exclude each other"},
		{"xds without rls", "rls: {xds: {server: 'eg:18001', tls: {secret: s}}}", "rls.xds.server needs rls.enabled"},
		{"xds TLS without its Secret", "rls: {enabled: true, xds: {server: 'eg:18001'}}", "rls.xds.tls.enabled needs rls.xds.tls.secret"},
		{"xds certificate without its key", "rls: {enabled: true, xds: {server: 'eg:18001', tls: {secret: s, keyFile: ''}}}", "go together"},
		{"xds Secret without TLS", "rls: {enabled: true, xds: {server: 'eg:18001', tls: {enabled: false, secret: s}}}", "rls.xds.tls.secret needs rls.xds.tls.enabled"},
		{"xds server without a port", "rls: {enabled: true, xds: {server: envoy-gateway, tls: {secret: s}}}", "does not match pattern"},
		{"xds without a node id", "rls: {enabled: true, xds: {server: 'eg:18001', nodeId: '', tls: {secret: s}}}", "minLength"},
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
