package chart

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// What every rendering must hold, whatever the values: the ways a chart
// can render objects the API server accepts that still cannot form, scale
// or restart a cluster.

// expect is what a rendering's values should give.
type expect struct {
	replicas    int
	addressPort int // the port in every node's address: the plain one, or the TLS one alone
	bus         int
	metrics     int
	persistence bool
	secrets     Secrets // the values of the Secrets the pods read
}

// defaults is what the chart's default values give.
func defaults() expect {
	return expect{replicas: 3, addressPort: 6380, bus: 16380, metrics: 9380, persistence: true}
}

// checkInvariants checks everything every rendering must hold.
func checkInvariants(t *testing.T, r *rendering, want expect) {
	t.Helper()
	checkStatefulSet(t, r, want)
	headless := checkHeadlessService(t, r)
	checkVolumes(t, r, want)
	checkFlags(t, r, want, headless)
	members := checkMembers(t, r, want, headless)
	checkPods(t, r, want, members)
	checkJoinService(t, r, want)
	checkRBAC(t, r)
	checkProbes(t, r, want)
	checkServices(t, r)
	checkDisruptionBudget(t, r)
	checkNetworkPolicy(t, r)
	checkSecurity(t, r)
	checkLabels(t, r)
}

// podLabels are the labels of the StatefulSet's pods.
func (r *rendering) podLabels() labels.Set { return r.set.Spec.Template.Labels }

func checkStatefulSet(t *testing.T, r *rendering, want expect) {
	t.Helper()
	s := r.set.Spec
	if s.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: the first members must start together, a quorum of them forming the cluster", s.PodManagementPolicy)
	}
	if s.Replicas == nil || int(*s.Replicas) != want.replicas {
		t.Errorf("replicas %v, want %d", s.Replicas, want.replicas)
	}
	sel, err := metaSelector(s.Selector)
	if err != nil || !sel.Matches(r.podLabels()) {
		t.Errorf("the selector %v does not match the pods' labels %v (%v)", s.Selector, r.podLabels(), err)
	}
	if s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("updateStrategy %q: pods must be restarted one at a time", s.UpdateStrategy.Type)
	}
	leave, err := parseSeconds(r.flag(t, "leave-timeout"))
	if err != nil {
		t.Fatal(err)
	}
	grace := r.set.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || *grace < int64(leave)+10 {
		t.Errorf("terminationGracePeriodSeconds %v: a pod that leaves needs --leave-timeout (%ds) and the shutdown after it", grace, leave)
	}
}

// parseSeconds reads the chart's --leave-timeout, written as whole seconds.
func parseSeconds(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "s"))
	if err != nil || !strings.HasSuffix(s, "s") {
		return 0, fmt.Errorf("--leave-timeout=%s: want whole seconds", s)
	}
	return n, nil
}

// checkHeadlessService checks the Service serviceName names, and returns it.
func checkHeadlessService(t *testing.T, r *rendering) *corev1.Service {
	t.Helper()
	svc, err := r.objs.Service(r.set.Spec.ServiceName)
	if err != nil {
		t.Fatalf("serviceName %q: %v", r.set.Spec.ServiceName, err)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s: clusterIP %q, want None: the pods' own names resolve only under a headless Service", svc.Name, svc.Spec.ClusterIP)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: publishNotReadyAddresses is off: a cluster being formed (no pod ready) could not reach its members", svc.Name)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(r.podLabels()) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s selects %v, not the pods (%v)", svc.Name, svc.Spec.Selector, r.podLabels())
	}
	return svc
}

func checkVolumes(t *testing.T, r *rendering, want expect) {
	t.Helper()
	claims := r.set.Spec.VolumeClaimTemplates
	var emptyDir bool
	for _, v := range r.set.Spec.Template.Spec.Volumes {
		if v.Name == "data" {
			emptyDir = v.EmptyDir != nil
			if !emptyDir {
				t.Errorf("volume data: %+v, want an emptyDir or a claim template", v.VolumeSource)
			}
		}
	}
	switch {
	case want.persistence && (len(claims) != 1 || claims[0].Name != "data"):
		t.Errorf("%d volumeClaimTemplates (%v), want one, named data", len(claims), claims)
	case want.persistence && emptyDir:
		t.Error("a data emptyDir beside the claim template")
	case want.persistence:
		if q, ok := claims[0].Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.IsZero() {
			t.Errorf("the claim template requests no storage: %+v", claims[0].Spec.Resources)
		}
		sel, err := metaSelector(r.set.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(claims[0].Labels)) {
			t.Errorf("the claims' labels %v: they outlive the release, and must be found by its labels", claims[0].Labels)
		}
	case len(claims) != 0 || !emptyDir:
		t.Errorf("without persistence: %d claim templates, emptyDir %v; want none and an emptyDir", len(claims), emptyDir)
	}
	mount := mountOf(r.c, "data")
	if mount == nil {
		t.Fatal("the data volume is not mounted")
	}
	if dir := r.flag(t, "data-dir"); !strings.HasPrefix(dir, mount.MountPath+"/") {
		t.Errorf("--data-dir %s is not on the data volume (%s)", dir, mount.MountPath)
	}
}

// mountOf returns c's mount of the volume called name.
func mountOf(c *corev1.Container, name string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// checkFlags checks the flags every pod gets.
func checkFlags(t *testing.T, r *rendering, want expect, headless *corev1.Service) {
	t.Helper()
	fixed := map[string]string{
		"bind":                      "0.0.0.0",
		"announce":                  fmt.Sprintf("$(POD_NAME).%s.$(POD_NAMESPACE).svc:%d@%d", headless.Name, want.addressPort, want.bus),
		"bus-listen":                fmt.Sprintf("0.0.0.0:%d", want.bus),
		"metrics-port":              strconv.Itoa(want.metrics),
		"rejoin-if-forgotten":       "",
		"desired-nodes-statefulset": r.set.Name,
	}
	for name, v := range fixed {
		if got := r.flag(t, name); got != v {
			t.Errorf("--%s=%s, want %s", name, got, v)
		}
	}
	if _, err := strconv.Atoi(r.flag(t, "shards")); err != nil {
		t.Errorf("--shards: %v", err)
	}
	for _, name := range []string{"cluster", "node-id", "in-memory"} {
		if _, ok := r.flags[name]; ok {
			t.Errorf("--%s in the pod template: it would differ between pods, or restart every pod when replicas changes", name)
		}
	}
	// Whatever the kubelet is to expand must be defined in the container.
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	defined := map[string]bool{}
	for _, e := range r.c.Env {
		defined[e.Name] = true
	}
	for _, a := range append(append([]string{}, r.c.Command...), r.c.Args...) {
		for _, m := range ref.FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				t.Errorf("%s refers to $(%s), which the container does not define: the kubelet would leave it as written", a, m[1])
			}
		}
	}
}

// checkMembers checks the members ConfigMap the pods read RLSERVER_CLUSTER
// from, and returns its list.
func checkMembers(t *testing.T, r *rendering, want expect, headless *corev1.Service) []string {
	t.Helper()
	for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "RLSERVER_NODE_ID": "metadata.name"} {
		e := r.env(t, name)
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
			t.Errorf("env %s: %+v, want the pod's %s", name, e, path)
		}
	}
	e := r.env(t, "RLSERVER_CLUSTER")
	if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
		t.Fatalf("env RLSERVER_CLUSTER: %+v, want it from a ConfigMap, so that scaling changes no pod template", e)
	}
	ref := e.ValueFrom.ConfigMapKeyRef
	cm, err := r.objs.ConfigMap(ref.Name)
	if err != nil {
		t.Fatalf("RLSERVER_CLUSTER: %v", err)
	}
	list, ok := cm.Data[ref.Key]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %q", cm.Name, ref.Key)
	}
	members := strings.Split(list, ",")
	var wantList []string
	for i := range want.replicas {
		pod := fmt.Sprintf("%s-%d", r.set.Name, i)
		wantList = append(wantList, fmt.Sprintf("%s@%s.%s.%s.svc:%d@%d", pod, pod, headless.Name, r.release.Namespace, want.addressPort, want.bus))
	}
	if strings.Join(wantList, ",") != list {
		t.Errorf("the member list of %d replicas:\n got %s\nwant %s", want.replicas, list, strings.Join(wantList, ","))
	}
	return members
}

// checkPods resolves every pod's environment and args as the kubelet
// would, and checks that rlserver would accept them: its node id is its
// name, its announced address its own entry in the list, and its ordinal
// the number its name ends with.
func checkPods(t *testing.T, r *rendering, want expect, members []string) {
	t.Helper()
	spec, err := Spec(r.objs, r.release.Namespace, want.secrets)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pods) != want.replicas {
		t.Fatalf("%d pods resolved, want %d", len(spec.Pods), want.replicas)
	}
	for i, pod := range spec.Pods {
		env := map[string]string{}
		for _, e := range pod.Env {
			env[e.Name] = e.Value
		}
		if env["RLSERVER_NODE_ID"] != pod.Name {
			t.Errorf("pod %s: RLSERVER_NODE_ID %q", pod.Name, env["RLSERVER_NODE_ID"])
		}
		if !strings.HasSuffix(pod.Name, "-"+strconv.Itoa(i)) {
			t.Errorf("pod %s does not end with its ordinal %d (--desired-nodes-statefulset reads it)", pod.Name, i)
		}
		flags, err := parseFlags(pod.Args)
		if err != nil {
			t.Fatal(err)
		}
		if own := pod.Name + "@" + flags["announce"]; members[i] != own {
			t.Errorf("pod %s announces %s, but its entry in the list is %s: rlserver refuses to start", pod.Name, own, members[i])
		}
		if strings.Contains(strings.Join(pod.Args, " "), "$(") {
			t.Errorf("pod %s: args left unexpanded: %q", pod.Name, pod.Args)
		}
	}
}

// checkJoinService checks the Service --join names: the bus of the ready
// pods, through a cluster IP.
func checkJoinService(t *testing.T, r *rendering, want expect) {
	t.Helper()
	join := r.flag(t, "join")
	host, rest, ok := strings.Cut(join, ".$(POD_NAMESPACE).svc:")
	if !ok {
		t.Fatalf("--join=%s: want a Service of the pod's namespace", join)
	}
	if rest != fmt.Sprintf("%d@%d", want.addressPort, want.bus) {
		t.Errorf("--join=%s: want the bus port %d", join, want.bus)
	}
	svc, err := r.objs.Service(host)
	if err != nil {
		t.Fatalf("--join=%s: %v", join, err)
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("join Service %s: %+v; want a ClusterIP Service of the ready pods only", svc.Name, svc.Spec)
	}
	if len(svc.Spec.Ports) != 1 || int(svc.Spec.Ports[0].Port) != want.bus || svc.Spec.Ports[0].TargetPort != intstr.FromString("bus") {
		t.Errorf("join Service %s ports %+v: want the bus port %d alone", svc.Name, svc.Spec.Ports, want.bus)
	}
}

// checkRBAC checks that the pods may get their StatefulSet and nothing else.
func checkRBAC(t *testing.T, r *rendering) {
	t.Helper()
	sa := r.set.Spec.Template.Spec.ServiceAccountName
	if sa == "" || len(r.objs.ServiceAccounts()) != 1 || r.objs.ServiceAccounts()[0].Name != sa {
		t.Fatalf("serviceAccountName %q: want the chart's only ServiceAccount", sa)
	}
	if a := r.set.Spec.Template.Spec.AutomountServiceAccountToken; a != nil && !*a {
		t.Error("the service account's token is not mounted: --desired-nodes-statefulset cannot ask the API server")
	}
	roles, bindings := r.objs.Roles(), r.objs.RoleBindings()
	if len(roles) != 1 || len(bindings) != 1 {
		t.Fatalf("%d Roles and %d RoleBindings, want one of each", len(roles), len(bindings))
	}
	rules := roles[0].Rules
	if len(rules) != 1 || fmt.Sprint(rules[0].APIGroups) != "[apps]" || fmt.Sprint(rules[0].Resources) != "[statefulsets]" ||
		fmt.Sprint(rules[0].ResourceNames) != "["+r.set.Name+"]" || fmt.Sprint(rules[0].Verbs) != "[get]" {
		t.Errorf("Role %s rules %+v: want get on StatefulSet %s alone", roles[0].Name, rules, r.set.Name)
	}
	b := bindings[0]
	if b.RoleRef.Kind != "Role" || b.RoleRef.Name != roles[0].Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != sa || b.Subjects[0].Namespace != r.release.Namespace {
		t.Errorf("RoleBinding %s: %+v %+v, want Role %s bound to ServiceAccount %s/%s", b.Name, b.RoleRef, b.Subjects, roles[0].Name, r.release.Namespace, sa)
	}
}

// checkProbes checks the probes ask the metrics port the right paths.
func checkProbes(t *testing.T, r *rendering, want expect) {
	t.Helper()
	port := containerPort(r.c, "metrics")
	if port == nil || int(port.ContainerPort) != want.metrics || r.flag(t, "metrics-port") != strconv.Itoa(want.metrics) {
		t.Fatalf("container port metrics %+v, --metrics-port %s: want both %d", port, r.flags["metrics-port"], want.metrics)
	}
	for name, p := range map[string]struct {
		probe *corev1.Probe
		path  string
	}{
		"startup": {r.c.StartupProbe, "/healthz"}, "liveness": {r.c.LivenessProbe, "/healthz"}, "readiness": {r.c.ReadinessProbe, "/readyz"},
	} {
		switch {
		case p.probe == nil:
			t.Errorf("no %s probe", name)
		case p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromString("metrics"):
			t.Errorf("%s probe %+v: want GET %s on the metrics port", name, p.probe.ProbeHandler, p.path)
		}
	}
	if s := r.c.StartupProbe; s != nil && int(s.PeriodSeconds*s.FailureThreshold) < 300 {
		t.Errorf("startup probe allows %ds: a node loading large snapshots needs minutes", s.PeriodSeconds*s.FailureThreshold)
	}
}

// containerPort returns c's port called name.
func containerPort(c *corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// checkServices checks that every Service selects the pods and targets
// ports the container has.
func checkServices(t *testing.T, r *rendering) {
	t.Helper()
	for _, svc := range r.objs.Services() {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(r.podLabels()) {
			t.Errorf("Service %s selects %v, not the pods", svc.Name, svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type != intstr.String || containerPort(r.c, p.TargetPort.StrVal) == nil {
				t.Errorf("Service %s port %s targets %v, which the container does not have", svc.Name, p.Name, p.TargetPort.String())
			}
		}
	}
}

func checkDisruptionBudget(t *testing.T, r *rendering) {
	t.Helper()
	pdbs := r.objs.PodDisruptionBudgets()
	if len(pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets, want 1", len(pdbs))
	}
	p := pdbs[0].Spec
	if p.MaxUnavailable == nil || *p.MaxUnavailable != intstr.FromInt32(1) || p.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: maxUnavailable %v, minAvailable %v; want maxUnavailable 1", p.MaxUnavailable, p.MinAvailable)
	}
	sel, err := metaSelector(p.Selector)
	if err != nil || !sel.Matches(r.podLabels()) {
		t.Errorf("PodDisruptionBudget selects %v, not the pods", p.Selector)
	}
}

// checkNetworkPolicy checks that the bus is open to the release's pods
// alone.
func checkNetworkPolicy(t *testing.T, r *rendering) {
	t.Helper()
	for _, np := range r.objs.NetworkPolicies() {
		sel, err := metaSelector(&np.Spec.PodSelector)
		if err != nil || !sel.Matches(r.podLabels()) {
			t.Errorf("NetworkPolicy %s selects %v, not the pods", np.Name, np.Spec.PodSelector)
		}
		for _, rule := range np.Spec.Ingress {
			bus := false
			for _, p := range rule.Ports {
				bus = bus || (p.Port != nil && *p.Port == intstr.FromString("bus"))
			}
			if !bus {
				continue
			}
			if len(rule.Ports) != 1 || len(rule.From) != 1 || rule.From[0].PodSelector == nil || rule.From[0].NamespaceSelector != nil {
				t.Errorf("NetworkPolicy %s: the bus is open to %+v", np.Name, rule.From)
				continue
			}
			from, err := metaSelector(rule.From[0].PodSelector)
			if err != nil || !from.Matches(r.podLabels()) || from.Empty() {
				t.Errorf("NetworkPolicy %s: the bus is open to %v, not this release's pods", np.Name, rule.From[0].PodSelector)
			}
		}
	}
}

func checkSecurity(t *testing.T, r *rendering) {
	t.Helper()
	if links := r.set.Spec.Template.Spec.EnableServiceLinks; links == nil || *links {
		t.Error("service links are on: a Service called rlserver-<name> in the namespace would set RLSERVER_<NAME>_PORT, which rlserver may read as a setting")
	}
	pod := r.set.Spec.Template.Spec.SecurityContext
	if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot {
		t.Error("the pods may run as root")
	}
	sc := r.c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v: want a read-only root and no privilege escalation", sc)
	}
}

// checkLabels checks that every object says which release it belongs to.
func checkLabels(t *testing.T, r *rendering) {
	t.Helper()
	for _, obj := range r.objs.All {
		m, ok := obj.(interface{ GetLabels() map[string]string })
		if !ok {
			t.Errorf("%T has no labels", obj)
			continue
		}
		if m.GetLabels()["app.kubernetes.io/instance"] != r.release.Name {
			t.Errorf("%T %v: no app.kubernetes.io/instance=%s label", obj, m.GetLabels(), r.release.Name)
		}
	}
}

// volumeAt returns the container's mount at the directory of the file p
// (or at p), and the pod's volume it mounts; it fails the test when the
// file is on no volume.
func (r *rendering) volumeAt(t *testing.T, p string) (*corev1.VolumeMount, *corev1.Volume) {
	t.Helper()
	for i := range r.c.VolumeMounts {
		m := &r.c.VolumeMounts[i]
		if path.Clean(m.MountPath) != path.Dir(p) && path.Clean(m.MountPath) != path.Clean(p) {
			continue
		}
		for j := range r.set.Spec.Template.Spec.Volumes {
			if v := &r.set.Spec.Template.Spec.Volumes[j]; v.Name == m.Name {
				return m, v
			}
		}
	}
	t.Fatalf("%s: no volume mounted there (mounts %+v)", p, r.c.VolumeMounts)
	return nil, nil
}
