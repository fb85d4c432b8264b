package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// A rendering case: values, what they should give, and what to check
// beyond the invariants.
type renderCase struct {
	name   string
	r      Release
	want   func(*expect)
	checks func(t *testing.T, r *rendering)
}

// TestRenderMatrix renders the chart over values a platform team sets,
// decodes every object strictly into its API type, checks the invariants
// of checkInvariants, and what each case's values ask for.
func TestRenderMatrix(t *testing.T) {
	t.Parallel()
	for _, tc := range append(renderCases(), xdsCases(t)...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := defaults()
			if tc.want != nil {
				tc.want(&want)
			}
			r := render(t, tc.r)
			checkInvariants(t, r, want)
			if tc.checks != nil {
				tc.checks(t, r)
			}
		})
	}
}

func renderCases() []renderCase {
	return []renderCase{
		{name: "defaults", checks: checkDefaults},
		{name: "replicas-1", r: Release{Values: "replicas: 1"}, want: func(e *expect) { e.replicas = 1 }},
		{name: "replicas-3", r: Release{Values: "replicas: 3"}},
		{name: "replicas-5", r: Release{Values: "replicas: 5"}, want: func(e *expect) { e.replicas = 5 }},
		{
			name: "names", r: Release{Name: "edge", Namespace: "limits", Values: "fullnameOverride: rl\nports: {client: 7000, bus: 17000, metrics: 9000}"},
			want: func(e *expect) { e.addressPort, e.bus, e.metrics = 7000, 17000, 9000 },
			checks: func(t *testing.T, r *rendering) {
				if r.set.Name != "rl" {
					t.Errorf("StatefulSet %s, want fullnameOverride's rl", r.set.Name)
				}
			},
		},
		{
			name: "password", r: Release{Values: "auth: {passwordSecret: rl-auth}"},
			want:   func(e *expect) { e.secrets = Secrets{"rl-auth": {"password": "s3cret"}} },
			checks: checkPassword,
		},
		{name: "aclfile", r: Release{Values: "auth: {aclfileSecret: rl-users, aclfileKey: rlserver.acl}"}, checks: checkACL},
		{name: "tls", r: Release{Values: "tls: {enabled: true, secret: rl-tls}"}, checks: checkTLS},
		{
			name: "tls-only-and-bus", r: Release{Values: "tls: {enabled: true, secret: rl-tls, plainPort: false, cluster: true, authClients: \"no\"}"},
			want: func(e *expect) { e.addressPort = 6390 }, checks: checkTLSOnly,
		},
		{
			name: "rate-limit-service", r: Release{Values: `
rls:
  enabled: true
  responseHeaders: true
  config:
    edge.yaml: |
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 100}
    api.yml:
      domain: api
      descriptors:
        - {key: user, rate_limit: {unit: hour, requests_per_unit: 1000, algorithm: sliding}}
`}, checks: checkRLS,
		},
		{name: "rate-limit-service-own-configmap", r: Release{Values: "rls: {enabled: true, configMap: my-limits}"}, checks: checkRLSOwnConfigMap},
		{
			name: "metrics", r: Release{Values: `
metrics:
  serviceMonitor: {enabled: true, dropTopKeys: true, labels: {release: prom}}
  prometheusRule: {enabled: true, labels: {release: prom}}
  dashboard: {enabled: true}
`}, checks: checkMetrics,
		},
		{name: "persistence-off", r: Release{Values: "persistence: {enabled: false}"}, want: func(e *expect) { e.persistence = false }},
		{
			name: "extra-args", r: Release{Values: `
extraArgs: [--maxmemory=2gb, --log-format=json]
extraEnv: [{name: GOMEMLIMIT, value: 900MiB}]
`}, checks: checkExtra,
		},
		{
			name: "scheduling", r: Release{Values: `
podAntiAffinity: hard
nodeSelector: {disktype: ssd}
tolerations: [{key: dedicated, operator: Equal, value: rlserver, effect: NoSchedule}]
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
priorityClassName: high
persistence: {storageClass: fast, size: 50Gi, whenScaled: Delete}
service: {type: LoadBalancer}
networkPolicy: {clients: [{podSelector: {matchLabels: {role: api}}}], monitoring: [{namespaceSelector: {matchLabels: {name: monitoring}}}]}
`}, checks: checkScheduling,
		},
	}
}

// checkDefaults checks what a release without values gets.
func checkDefaults(t *testing.T, r *rendering) {
	t.Helper()
	for _, name := range []string{"auto-rebalance", "port", "shards", "protected-mode"} {
		r.flag(t, name)
	}
	if r.flags["protected-mode"] != "no" {
		t.Errorf("--protected-mode=%s: without a password, protected mode would refuse every client of another pod", r.flags["protected-mode"])
	}
	for _, absent := range []string{"requirepass", "aclfile", "tls-port", "grpc-port", "status-page", "rls-xds-server"} {
		if _, ok := r.flags[absent]; ok {
			t.Errorf("--%s by default", absent)
		}
	}
	if n := len(r.objs.ServiceMonitors()) + len(r.objs.PrometheusRules()); n != 0 {
		t.Errorf("%d monitoring objects by default: they need the Prometheus Operator's CRDs", n)
	}
	if r.set.Spec.Template.Spec.Affinity == nil || r.set.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
		t.Error("no anti-affinity: two pods on one node would take two replicas of each shard down with it")
	}
	if len(r.objs.NetworkPolicies()) != 1 {
		t.Error("no NetworkPolicy: the bus, unauthenticated, is open to every pod")
	}
}

func checkPassword(t *testing.T, r *rendering) {
	t.Helper()
	e := r.env(t, "RLSERVER_REQUIREPASS")
	if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "rl-auth" || e.ValueFrom.SecretKeyRef.Key != "password" {
		t.Errorf("RLSERVER_REQUIREPASS: %+v, want it from Secret rl-auth's key password", e)
	}
	if _, ok := r.flags["requirepass"]; ok {
		t.Error("the password is in the args, for anyone who can read the pod")
	}
}

func checkACL(t *testing.T, r *rendering) {
	t.Helper()
	file := r.flag(t, "aclfile")
	mount, vol := r.volumeAt(t, file)
	if vol.Secret == nil || vol.Secret.SecretName != "rl-users" || !mount.ReadOnly {
		t.Fatalf("--aclfile %s is on %+v (mount %+v), want Secret rl-users, read only", file, vol.VolumeSource, mount)
	}
	if len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != "rlserver.acl" || vol.Secret.Items[0].Path != filepath.Base(file) {
		t.Errorf("--aclfile %s: the Secret's items %+v do not put key rlserver.acl there", file, vol.Secret.Items)
	}
}

// checkTLSFiles checks the certificate files come from the TLS Secret.
func checkTLSFiles(t *testing.T, r *rendering, names ...string) {
	t.Helper()
	for _, name := range names {
		file := r.flag(t, name)
		_, vol := r.volumeAt(t, file)
		if vol.Secret == nil || vol.Secret.SecretName != "rl-tls" {
			t.Errorf("--%s %s is not from Secret rl-tls: %+v", name, file, vol.VolumeSource)
		}
	}
}

func checkTLS(t *testing.T, r *rendering) {
	t.Helper()
	if r.flag(t, "tls-port") != "6390" || r.flag(t, "port") != "6380" || r.flag(t, "tls-auth-clients") != "yes" {
		t.Errorf("flags %v: want the TLS port beside the plain one, client certificates required", r.flags)
	}
	checkTLSFiles(t, r, "tls-cert-file", "tls-key-file", "tls-ca-cert-file")
	if _, ok := r.flags["tls-cluster"]; ok {
		t.Error("--tls-cluster without tls.cluster")
	}
	svc, _ := r.objs.Service(r.set.Name)
	if !hasServicePort(svc, "redis-tls", 6390) || !hasServicePort(svc, "redis", 6380) {
		t.Errorf("client Service ports %+v: want redis and redis-tls", svc.Spec.Ports)
	}
}

func checkTLSOnly(t *testing.T, r *rendering) {
	t.Helper()
	if r.flag(t, "port") != "0" || r.flag(t, "tls-cluster") != "yes" {
		t.Errorf("flags %v: want --port=0 (TLS only) and --tls-cluster=yes", r.flags)
	}
	checkTLSFiles(t, r, "tls-cert-file", "tls-key-file", "tls-ca-cert-file")
	if containerPort(r.c, "redis") != nil {
		t.Error("a plain client port with TLS only")
	}
}

func hasServicePort(svc *corev1.Service, name string, port int32) bool {
	if svc == nil {
		return false
	}
	return slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == name && p.Port == port })
}

func checkRLS(t *testing.T, r *rendering) {
	t.Helper()
	if r.flag(t, "grpc-port") != "8081" || r.flag(t, "rls-response-headers") != "yes" {
		t.Errorf("flags %v: want --grpc-port=8081 --rls-response-headers=yes", r.flags)
	}
	cm := checkRLSMount(t, r, r.set.Name+"-rls")
	if cm == nil {
		t.Fatal("the chart rendered no ConfigMap for rls.config")
	}
	for _, file := range []string{"edge.yaml", "api.yml"} {
		var limits struct {
			Domain      string           `json:"domain"`
			Descriptors []map[string]any `json:"descriptors"`
		}
		if err := yaml.UnmarshalStrict([]byte(cm.Data[file]), &limits); err != nil || limits.Domain == "" || len(limits.Descriptors) != 1 {
			t.Errorf("ConfigMap %s key %s: %q (%v): want a domain's config", cm.Name, file, cm.Data[file], err)
		}
	}
	svc, _ := r.objs.Service(r.set.Name)
	if !hasServicePort(svc, "grpc", 8081) {
		t.Errorf("the client Service has no grpc port: %+v", svc.Spec.Ports)
	}
	for k := range r.set.Spec.Template.Annotations {
		if strings.Contains(k, "checksum") {
			t.Errorf("pod annotation %s: a change of the limits would restart every pod, where rlserver reloads them", k)
		}
	}
}

// checkRLSMount checks --rls-config is a directory mounted whole from
// ConfigMap name (no subPath: the kubelet updates it in place), and
// returns that ConfigMap when the chart rendered it.
func checkRLSMount(t *testing.T, r *rendering, name string) *corev1.ConfigMap {
	t.Helper()
	dir := r.flag(t, "rls-config")
	mount, vol := r.volumeAt(t, dir)
	if mount.MountPath != dir || mount.SubPath != "" || vol.ConfigMap == nil || vol.ConfigMap.Name != name {
		t.Errorf("--rls-config %s: mount %+v of %+v; want ConfigMap %s mounted whole there", dir, mount, vol.VolumeSource, name)
	}
	cm, _ := r.objs.ConfigMap(name)
	return cm
}

func checkRLSOwnConfigMap(t *testing.T, r *rendering) {
	t.Helper()
	if cm := checkRLSMount(t, r, "my-limits"); cm != nil {
		t.Error("the chart rendered the operator's own ConfigMap")
	}
	if _, err := r.objs.ConfigMap(r.set.Name + "-rls"); err == nil {
		t.Error("a limits ConfigMap beside rls.configMap")
	}
}

func checkMetrics(t *testing.T, r *rendering) {
	t.Helper()
	sms, rules := r.objs.ServiceMonitors(), r.objs.PrometheusRules()
	if len(sms) != 1 || len(rules) != 1 {
		t.Fatalf("%d ServiceMonitors, %d PrometheusRules, want one of each", len(sms), len(rules))
	}
	sm := sms[0]
	// It must select the headless Service alone: it lists every pod,
	// ready or not, and has the metrics port.
	sel, err := metaSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	var selected []string
	for _, svc := range r.objs.Services() {
		if sel.Matches(labels.Set(svc.Labels)) {
			selected = append(selected, svc.Name)
			if !hasServicePort(svc, "metrics", 9380) {
				t.Errorf("ServiceMonitor selects Service %s, which has no metrics port", svc.Name)
			}
		}
	}
	if len(selected) != 1 || selected[0] != r.set.Spec.ServiceName {
		t.Errorf("ServiceMonitor selects %v, want the headless Service %s alone", selected, r.set.Spec.ServiceName)
	}
	if sm.Labels["release"] != "prom" || rules[0].Labels["release"] != "prom" {
		t.Error("the monitoring objects lack the labels the values gave")
	}
	ep := sm.Spec.Endpoints
	if len(ep) != 1 || ep[0].Port != "metrics" || ep[0].Path != "/metrics" {
		t.Fatalf("endpoints %+v: want the metrics port's /metrics", ep)
	}
	job := slices.ContainsFunc(ep[0].Relabelings, func(c RelabelConfig) bool {
		return c.TargetLabel == "job" && c.Replacement != nil && *c.Replacement == "rlserver"
	})
	if !job {
		t.Errorf("relabelings %+v: the alert rules and the dashboard select job=\"rlserver\"", ep[0].Relabelings)
	}
	if len(ep[0].MetricRelabelings) != 1 || ep[0].MetricRelabelings[0].Regex != "rlserver_top_key_decisions" || ep[0].MetricRelabelings[0].Action != "drop" {
		t.Errorf("metricRelabelings %+v: want rlserver_top_key_decisions dropped", ep[0].MetricRelabelings)
	}
	checkRules(t, r, rules[0])
	checkDashboard(t, r)
}

// checkRules checks that the PrometheusRule holds every alert of
// ops/prometheus, with the disk read from the pods' volume claims.
func checkRules(t *testing.T, r *rendering, rule *PrometheusRule) {
	t.Helper()
	var ops PrometheusRuleSpec
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "ops", "prometheus", "rlserver.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &ops); err != nil {
		t.Fatal(err)
	}
	alerts := func(s PrometheusRuleSpec) (names []string) {
		for _, g := range s.Groups {
			for _, rl := range g.Rules {
				names = append(names, rl.Alert)
			}
		}
		return names
	}
	if got, want := alerts(rule.Spec), alerts(ops); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("alerts %v, want ops/prometheus's %v", got, want)
	}
	claims := `persistentvolumeclaim=~"data-` + r.set.Name + `-[0-9]+"`
	for _, g := range rule.Spec.Groups {
		for _, rl := range g.Rules {
			if strings.Contains(rl.Expr, "mountpoint=") {
				t.Errorf("alert %s reads a host mountpoint: %s", rl.Alert, rl.Expr)
			}
			if strings.HasPrefix(rl.Alert, "RlserverDisk") && !strings.Contains(rl.Expr, claims) {
				t.Errorf("alert %s: %s does not read the pods' claims (%s)", rl.Alert, rl.Expr, claims)
			}
		}
	}
}

// checkDashboard checks the dashboard ConfigMap holds ops/grafana's.
func checkDashboard(t *testing.T, r *rendering) {
	t.Helper()
	cm, err := r.objs.ConfigMap(r.set.Name + "-dashboard")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard labels %v: Grafana's sidecar looks for grafana_dashboard=1", cm.Labels)
	}
	want, err := os.ReadFile(filepath.Join(repoRoot(), "ops", "grafana", "rlserver.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got, ops any
	if err := json.Unmarshal([]byte(cm.Data["rlserver.json"]), &got); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &ops); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(ops)
	if string(a) != string(b) {
		t.Error("the dashboard differs from ops/grafana/rlserver.json")
	}
}

func checkExtra(t *testing.T, r *rendering) {
	t.Helper()
	n := len(r.c.Args)
	if n < 2 || r.c.Args[n-2] != "--maxmemory=2gb" || r.c.Args[n-1] != "--log-format=json" {
		t.Errorf("args %q: want extraArgs last, as given", r.c.Args)
	}
	if e := r.env(t, "GOMEMLIMIT"); e.Value != "900MiB" {
		t.Errorf("GOMEMLIMIT %+v", e)
	}
}

func checkScheduling(t *testing.T, r *rendering) {
	t.Helper()
	spec := r.set.Spec.Template.Spec
	if a := spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("affinity %+v: want a required anti-affinity", spec.Affinity)
	}
	if spec.NodeSelector["disktype"] != "ssd" || len(spec.Tolerations) != 1 || len(spec.TopologySpreadConstraints) != 1 || spec.PriorityClassName != "high" {
		t.Errorf("scheduling values lost: %+v", spec)
	}
	c := r.set.Spec.VolumeClaimTemplates[0]
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "fast" || c.Spec.Resources.Requests.Storage().String() != "50Gi" {
		t.Errorf("claim template %+v", c.Spec)
	}
	if p := r.set.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenScaled != "Delete" || p.WhenDeleted != "Retain" {
		t.Errorf("retention policy %+v", p)
	}
	svc, _ := r.objs.Service(r.set.Name)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("client Service type %s", svc.Spec.Type)
	}
	for _, s := range r.objs.Services() {
		if s.Name != r.set.Name && s.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("Service %s is %s: only the client Service follows service.type; the bus stays inside", s.Name, s.Spec.Type)
		}
	}
	np := r.objs.NetworkPolicies()[0]
	if len(np.Spec.Ingress) != 3 || len(np.Spec.Ingress[1].From) != 1 || len(np.Spec.Ingress[2].From) != 1 {
		t.Errorf("NetworkPolicy ingress %+v: want the clients and monitoring peers given", np.Spec.Ingress)
	}
}

// repoRoot is the repository's root, three directories above the chart's.
func repoRoot() string { return filepath.Join(Dir(), "..", "..", "..") }
