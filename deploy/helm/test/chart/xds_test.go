package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The rate limit service with its limits over xDS (rls.xds): an Envoy
// Gateway install as docs/kubernetes.md gives it, and a control plane
// without TLS.

// Envoy Gateway's names, from its source (internal/infrastructure/
// kubernetes/ratelimit and proxy): the labels its envoy-ratelimit Service
// selects, the port it targets (a number, not a name), and the labels of
// its Envoy proxies, which call that Service.
var (
	egRateLimitSelector = labels.Set{
		"app.kubernetes.io/name":       "envoy-ratelimit",
		"app.kubernetes.io/component":  "ratelimit",
		"app.kubernetes.io/managed-by": "envoy-gateway",
	}
	egProxyLabels = labels.Set{
		"app.kubernetes.io/name":       "envoy",
		"app.kubernetes.io/component":  "proxy",
		"app.kubernetes.io/managed-by": "envoy-gateway",
	}
)

const egRateLimitPort = 8081

// envoyGatewayValues reads the values docs/kubernetes.md tells an Envoy
// Gateway user to paste: what is between "cat > eg-values.yaml <<'EOF'"
// and the next "EOF" line. The test renders the page's own text, so the
// page cannot drift from what is tested.
func envoyGatewayValues(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open = "cat > eg-values.yaml <<'EOF'\n"
	_, rest, ok := strings.Cut(string(b), open)
	if !ok {
		t.Fatalf("docs/kubernetes.md has no %q: the Envoy Gateway values are tested from there", strings.TrimSpace(open))
	}
	values, _, ok := strings.Cut(rest, "\nEOF\n")
	if !ok {
		t.Fatal("docs/kubernetes.md: the eg-values.yaml here-document has no EOF line")
	}
	return values
}

// xdsCases are the render matrix's cases of rls.xds.
func xdsCases(t *testing.T) []renderCase {
	return []renderCase{
		{
			name: "envoy-gateway",
			r:    Release{Name: "rl", Namespace: "envoy-gateway-system", Values: envoyGatewayValues(t)},
			want: func(e *expect) {
				e.secrets = Secrets{"rl-auth": {"password": "s3cret"}, "envoy-rate-limit": {"tls.crt": "", "tls.key": "", "ca.crt": ""}}
			},
			checks: checkEnvoyGateway,
		},
		{
			name: "rate-limit-service-xds-plain",
			r:    Release{Values: "rls: {enabled: true, xds: {server: 'apk-ratelimit-config.apk.svc:18000', nodeId: apk, tls: {enabled: false}}}"},
			checks: func(t *testing.T, r *rendering) {
				t.Helper()
				checkXDSFlags(t, r, "apk-ratelimit-config.apk.svc:18000", "apk")
				for _, absent := range []string{"rls-xds-tls", "rls-xds-tls-cert-file", "rls-xds-tls-key-file", "rls-xds-tls-ca-cert-file"} {
					if _, ok := r.flags[absent]; ok {
						t.Errorf("--%s with rls.xds.tls.enabled false", absent)
					}
				}
				if mountOf(r.c, "rls-xds") != nil {
					t.Error("the xDS certificates are mounted without TLS")
				}
			},
		},
	}
}

// checkXDSFlags checks the gRPC port serves limits from server as node, and
// nothing of the file-based config is left: no --rls-config, no limits
// ConfigMap or its mount.
func checkXDSFlags(t *testing.T, r *rendering, server, node string) {
	t.Helper()
	if r.flag(t, "grpc-port") != "8081" || r.flag(t, "rls-xds-server") != server || r.flag(t, "rls-xds-node-id") != node {
		t.Errorf("flags %v: want --grpc-port=8081 --rls-xds-server=%s --rls-xds-node-id=%s", r.flags, server, node)
	}
	if _, ok := r.flags["rls-config"]; ok {
		t.Error("--rls-config with rls.xds.server: rlserver refuses the two together")
	}
	if mountOf(r.c, "rls") != nil {
		t.Error("a limits ConfigMap is mounted with rls.xds.server")
	}
	for _, cm := range r.objs.ConfigMaps() {
		if strings.HasSuffix(cm.Name, "-rls") {
			t.Errorf("ConfigMap %s of limits rendered with rls.xds.server", cm.Name)
		}
	}
	// The gRPC port stays where Envoy reaches it.
	for _, name := range []string{r.set.Name, r.set.Spec.ServiceName} {
		if svc, _ := r.objs.Service(name); !hasServicePort(svc, "grpc", 8081) {
			t.Errorf("Service %s has no grpc port with rls.xds", name)
		}
	}
	np := r.objs.NetworkPolicies()
	if len(np) != 1 || !policyOpens(np[0], "grpc") {
		t.Errorf("the NetworkPolicy does not open the grpc port with rls.xds: %+v", np)
	}
}

// policyOpens says whether one of np's rules opens the port called name.
func policyOpens(np *networkingv1.NetworkPolicy, name string) bool {
	return slices.ContainsFunc(np.Spec.Ingress, func(rule networkingv1.NetworkPolicyIngressRule) bool { return ruleOpens(rule, name) })
}

// checkEnvoyGateway checks docs/kubernetes.md's Envoy Gateway values: the
// pods subscribe to Envoy Gateway's xDS with the envoy-rate-limit Secret's
// files, serve the gRPC port on 8081 with TLS and client certificates from
// that Secret, carry the labels Envoy Gateway's envoy-ratelimit Service
// selects, and let its proxies in.
func checkEnvoyGateway(t *testing.T, r *rendering) {
	t.Helper()
	checkXDSFlags(t, r, "envoy-gateway:18001", "envoy-ratelimit")
	if r.flag(t, "rls-xds-tls") != "yes" {
		t.Error("no --rls-xds-tls=yes: Envoy Gateway's xDS server asks for mutual TLS")
	}
	// envoyproxy/ratelimit's deployment reads /certs/tls.crt, tls.key and
	// ca.crt of the Secret envoy-rate-limit.
	for flag, key := range map[string]string{"rls-xds-tls-cert-file": "tls.crt", "rls-xds-tls-key-file": "tls.key", "rls-xds-tls-ca-cert-file": "ca.crt", "tls-cert-file": "tls.crt", "tls-key-file": "tls.key", "tls-ca-cert-file": "ca.crt"} {
		file := r.flag(t, flag)
		mount, vol := r.volumeAt(t, file)
		if vol.Secret == nil || vol.Secret.SecretName != "envoy-rate-limit" || filepath.Base(file) != key || !mount.ReadOnly || len(vol.Secret.Items) != 0 {
			t.Errorf("--%s=%s: mount %+v of %+v, want key %s of Secret envoy-rate-limit, read only", flag, file, mount, vol.VolumeSource, key)
		}
	}
	if r.flag(t, "tls-auth-clients") != "yes" {
		t.Errorf("--tls-auth-clients=%s: Envoy presents Envoy Gateway's client certificate; require it", r.flags["tls-auth-clients"])
	}
	if !egRateLimitSelector.AsSelector().Matches(r.podLabels()) {
		t.Errorf("pod labels %v: Envoy Gateway's envoy-ratelimit Service selects %v", r.podLabels(), egRateLimitSelector)
	}
	if p := containerPort(r.c, "grpc"); p == nil || p.ContainerPort != egRateLimitPort {
		t.Errorf("grpc container port %+v: Envoy Gateway's Service targets port %d", p, egRateLimitPort)
	}
	np := r.objs.NetworkPolicies()[0]
	for _, rule := range np.Spec.Ingress {
		if !ruleOpens(rule, "grpc") {
			continue
		}
		for _, peer := range rule.From {
			if sel, err := metaSelector(peer.PodSelector); err == nil && peer.NamespaceSelector == nil && sel.Matches(egProxyLabels) {
				return
			}
		}
		t.Errorf("NetworkPolicy: the grpc port is open to %+v, not to Envoy Gateway's proxies (%v)", rule.From, egProxyLabels)
		return
	}
	t.Error("NetworkPolicy: no rule opens the grpc port")
}

// ruleOpens says whether rule opens the port called name.
func ruleOpens(rule networkingv1.NetworkPolicyIngressRule, name string) bool {
	for _, p := range rule.Ports {
		if p.Port != nil && *p.Port == intstr.FromString(name) {
			return true
		}
	}
	return false
}
