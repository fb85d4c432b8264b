//go:build linux

package tests

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// statefulSet does what the StatefulSet controller and the kubelet do with
// the chart's pods, with podman: a pod per ordinal below replicas, all
// created and deleted in parallel (podManagementPolicy: Parallel), each a
// container of the image on the test's network with a new address, its
// name in the cluster's DNS (the headless Service publishes pods that are
// not ready), the volume of its claim (kept when the pod goes), its
// service account mounted, its security context applied, and its readiness
// probed; a pod deleted leaves the Services' endpoints at once, sleeps its
// preStop, gets SIGTERM, and is killed after its grace period. Helm
// upgrade's part, the members ConfigMap a pod reads when it starts and the
// StatefulSet's replicas the API server answers, changes with scale.
//
// The readiness probe runs every probePeriod rather than the chart's
// period (5 s): a pod is found ready sooner, nothing else changes.
type statefulSet struct {
	t        *testing.T
	charts   *chartRenderer
	network  testNetwork
	dns      *clusterDNS
	api      *apiServer
	password string
	shards   int

	mu      sync.Mutex
	spec    *renderedSpec  // at the current replicas
	pods    map[int]*pod   // by ordinal: the pods that exist, running or terminating
	volumes map[int]string // by ordinal: the claims, which outlive their pods
	hosts   int            // addresses given: every pod gets a new one
	ended   []string       // the logs of the containers that ended
}

// probePeriod is how often the emulated kubelet probes readiness.
const probePeriod = time.Second

// pod is one pod of the StatefulSet.
type pod struct {
	ordinal     int
	name        string
	address     string // its DNS name under the headless Service
	c           *container
	ip          string
	probe       *readiness
	terminating atomic.Bool
}

// newStatefulSet makes the StatefulSet's network, with the cluster's DNS,
// its Services and its API server on the network's gateway, and no pod
// yet (replicas 0): scale installs it.
func newStatefulSet(t *testing.T, charts *chartRenderer, replicas int, password string) *statefulSet {
	t.Helper()
	spec := charts.at(t, replicas)
	s := &statefulSet{
		t: t, charts: charts, network: newNetwork(t, "sts"), password: password, spec: spec,
		pods: map[int]*pod{}, volumes: map[int]string{},
	}
	for _, arg := range spec.Pods[0].Args {
		if v, ok := strings.CutPrefix(arg, "--shards="); ok {
			s.shards, _ = strconv.Atoi(v)
		}
	}
	if s.shards < 1 {
		t.Fatalf("the rendered args %q set no --shards", spec.Pods[0].Args)
	}
	gw := s.network.Gateway
	s.dns = startClusterDNS(t, gw)
	s.api = startAPIServer(t, gw, spec.Namespace, spec.StatefulSet, 0)
	ports := map[int]string{}
	for _, svc := range spec.Services {
		if svc.Headless {
			continue // its names are the pods' own (publish)
		}
		// Every Service's virtual address is the gateway: kube-proxy is
		// emulated there, so two Services may not share a port.
		s.dns.set(svc.Name+"."+spec.Namespace+".svc", gw)
		for _, p := range svc.Ports {
			if other, taken := ports[p.Port]; taken {
				t.Fatalf("Services %s and %s both serve port %d: the emulation serves every Service on one address", other, svc.Name, p.Port)
			}
			ports[p.Port] = svc.Name
			startServiceProxy(t, net.JoinHostPort(gw, strconv.Itoa(p.Port)), p.TargetPort, s.endpoints)
		}
	}
	t.Cleanup(func() {
		s.mu.Lock()
		pods := slices.Collect(maps.Values(s.pods))
		s.mu.Unlock()
		for _, p := range pods {
			p.probe.close()
		}
	})
	return s
}

// scale sets the StatefulSet's replicas to n, as helm upgrade --set
// replicas=n does (the API server answers n, and the members ConfigMap
// lists n pods), then does what the controller does: it creates the
// missing pods below n and deletes those at or above it, all at once. It
// returns once every pod deleted has ended and every pod created runs
// (ready or not), with the deleted pods' ends by ordinal.
func (s *statefulSet) scale(n int) map[int]podEnd {
	s.t.Helper()
	s.api.setReplicas(n)
	spec := s.charts.at(s.t, n)
	s.mu.Lock()
	s.spec = spec
	var create, remove []int
	for i := range n {
		if s.pods[i] == nil {
			create = append(create, i)
		}
	}
	for i := range s.pods {
		if i >= n {
			remove = append(remove, i)
		}
	}
	s.mu.Unlock()
	ends := map[int]podEnd{}
	var mu sync.Mutex
	s.inParallel(append(create, remove...), func(i int) error {
		if i < n {
			return s.createPod(i)
		}
		end, err := s.deletePod(i)
		mu.Lock()
		ends[i] = end
		mu.Unlock()
		return err
	})
	return ends
}

// inParallel runs f for every ordinal at once, and fails the test with
// their errors.
func (s *statefulSet) inParallel(ordinals []int, f func(i int) error) {
	s.t.Helper()
	errs := make([]error, len(ordinals))
	var wg sync.WaitGroup
	for k, i := range ordinals {
		wg.Go(func() { errs[k] = f(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.t.Fatal(err)
		}
	}
}

// createPod starts pod i of the current spec, on its claim's volume (made
// on its first start), at an address no container had before.
func (s *statefulSet) createPod(i int) error {
	s.mu.Lock()
	spec := s.spec
	s.hosts++
	host := 10 + s.hosts
	volume, haveVolume := s.volumes[i]
	s.mu.Unlock()
	if i >= len(spec.Pods) {
		return fmt.Errorf("pod %d: the spec renders %d pods", i, len(spec.Pods))
	}
	if host > 254 {
		return fmt.Errorf("pod %d: the network's addresses are spent", i)
	}
	rp := spec.Pods[i]
	if !haveVolume {
		// The claim's volume: <template>-<pod>, as the controller names it.
		volume = owned + "-" + spec.ClaimTemplates[0] + "-" + rp.Name
		if _, err := podmanErr(podmanTimeout, "volume", "create", volume); err != nil {
			return err
		}
		s.t.Cleanup(func() { podmanErr(podmanTimeout, "volume", "rm", "--force", volume) })
		s.mu.Lock()
		s.volumes[i] = volume
		s.mu.Unlock()
	}
	c, err := runContainer(s.t, s.containerSpec(spec, rp, volume, s.network.IP(host)), nil)
	if err != nil {
		return fmt.Errorf("pod %s: %w", rp.Name, err)
	}
	ip, err := podmanErr(podmanTimeout, "inspect", "--format",
		fmt.Sprintf("{{(index .NetworkSettings.Networks %q).IPAddress}}", s.network.Name), c.Name)
	if err != nil || ip != s.network.IP(host) {
		return fmt.Errorf("pod %s: address %q, want %s (%v)", rp.Name, ip, s.network.IP(host), err)
	}
	p := &pod{ordinal: i, name: rp.Name, address: rp.Address, c: c, ip: ip}
	probe := spec.ReadinessProbe
	p.probe = startReadiness(fmt.Sprintf("http://%s%s", net.JoinHostPort(ip, strconv.Itoa(spec.probePort(s.t))), probe.HTTPGet.Path),
		time.Duration(probe.TimeoutSeconds)*time.Second, probePeriod, probe.FailureThreshold)
	s.mu.Lock()
	s.pods[i] = p
	s.publish()
	s.mu.Unlock()
	return nil
}

// containerSpec is how podman runs pod rp: the rendered command, args and
// environment, the pod's name as its host name, the cluster's DNS with
// Kubernetes' search path, the API server's address and the service
// account, the claim's volume at each mount, the security context.
func (s *statefulSet) containerSpec(spec *renderedSpec, rp renderedPod, volume, ip string) containerSpec {
	env := map[string]string{
		"KUBERNETES_SERVICE_HOST": s.api.Host,
		"KUBERNETES_SERVICE_PORT": s.api.Port,
	}
	for _, e := range rp.Env {
		env[e.Name] = e.Value
	}
	ns := spec.Namespace
	extra := []string{
		"--dns", s.network.Gateway, "--dns-option", "ndots:5",
		"--dns-search", ns + ".svc." + clusterDomain, "--dns-search", "svc." + clusterDomain, "--dns-search", clusterDomain,
	}
	extra = append(extra, spec.securityFlags()...)
	if len(rp.Command) > 0 {
		extra = append(extra, "--entrypoint", rp.Command[0])
	}
	volumes := []string{s.api.AccountDir + ":" + serviceAccountPath + ":ro"}
	for _, m := range spec.VolumeMounts {
		volumes = append(volumes, volume+":"+m.MountPath)
	}
	args := rp.Args
	if len(rp.Command) > 1 {
		args = append(slices.Clone(rp.Command[1:]), args...)
	}
	return containerSpec{
		Name: fmt.Sprintf("%s-at-%s", rp.Name, strings.ReplaceAll(ip, ".", "-")), Image: spec.Image, Args: args, Env: env,
		Hostname: rp.Name, Network: &s.network, IP: ip, Volumes: volumes, Extra: extra,
	}
}

// podEnd is how a deleted pod's container ended.
type podEnd struct {
	Code int
	Took time.Duration // from SIGTERM to its exit
	Log  string
}

// deletePod deletes pod i as the kubelet does: out of the Services'
// endpoints at once (kube-proxy sends it no new connection), the preStop
// sleep, SIGTERM, SIGKILL after the rest of the grace period; its name
// goes from the DNS once its container has ended. Its volume stays.
func (s *statefulSet) deletePod(i int) (podEnd, error) {
	s.mu.Lock()
	p, spec := s.pods[i], s.spec
	s.mu.Unlock()
	if p == nil {
		return podEnd{}, fmt.Errorf("pod %d does not exist", i)
	}
	p.terminating.Store(true)
	// The kubelet's lifecycle.preStop.sleep: the time the chart gives the
	// Services to stop sending the pod clients.
	time.Sleep(spec.preStopSleep())
	grace := time.Duration(spec.TerminationGracePeriodSeconds)*time.Second - spec.preStopSleep()
	began := time.Now()
	_, err := podmanErr(grace+podmanTimeout, "stop", "--time", strconv.Itoa(int(grace.Seconds())), p.c.Name)
	end := podEnd{Took: time.Since(began)}
	if err != nil {
		return end, fmt.Errorf("pod %s: %w", p.name, err)
	}
	code, err := podmanErr(podmanTimeout, "inspect", "--format", "{{.State.ExitCode}}", p.c.Name)
	if end.Code, err = strconv.Atoi(code); err != nil {
		return end, fmt.Errorf("pod %s: exit code %q: %w", p.name, code, err)
	}
	end.Log, _ = containerLogs(p.c.Name)
	if _, err := podmanErr(podmanTimeout, "rm", "--force", p.c.Name); err != nil {
		return end, err
	}
	p.probe.close()
	s.mu.Lock()
	delete(s.pods, i)
	s.dns.set(p.address)
	s.publish()
	s.ended = append(s.ended, fmt.Sprintf("--- %s at %s (exit %d after %v):\n%s", p.name, p.ip, end.Code, end.Took.Round(time.Millisecond), end.Log))
	s.mu.Unlock()
	return end, nil
}

// replace deletes pod i and creates it again once it has ended, as the
// controller does with a pod deleted (kubectl delete pod, a rolling
// update); it returns how the old one ended.
func (s *statefulSet) replace(i int) (podEnd, error) {
	end, err := s.deletePod(i)
	if err != nil {
		return end, err
	}
	return end, s.createPod(i)
}

// publish puts every pod's name in the DNS, and the headless Service's
// own name with every pod's address (it publishes those not ready); s.mu
// is held.
func (s *statefulSet) publish() {
	var all []string
	for _, i := range slices.Sorted(maps.Keys(s.pods)) {
		p := s.pods[i]
		s.dns.set(p.address, p.ip)
		all = append(all, p.ip)
	}
	s.dns.set(s.spec.ServiceName+"."+s.spec.Namespace+".svc", all...)
}

// endpoints are the addresses of the pods ready and not terminating: a
// Service's endpoints, which kube-proxy sends its connections to.
func (s *statefulSet) endpoints() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.pods {
		if !p.terminating.Load() && p.probe.isReady() {
			out = append(out, p.ip)
		}
	}
	return out
}

// pod is pod i, nil when it does not exist.
func (s *statefulSet) pod(i int) *pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[i]
}

// waitReady waits until the pods of ordinals exist and are ready, and
// returns how long it waited.
func (s *statefulSet) waitReady(timeout time.Duration, ordinals ...int) time.Duration {
	s.t.Helper()
	began := time.Now()
	poll.Until(s.t, timeout, fmt.Sprintf("pods %v to be ready", ordinals), func() (bool, error) {
		var waiting []string
		for _, i := range ordinals {
			if p := s.pod(i); p == nil || p.terminating.Load() || !p.probe.isReady() {
				waiting = append(waiting, strconv.Itoa(i))
			}
		}
		return len(waiting) == 0, fmt.Errorf("not ready: %s", strings.Join(waiting, ", "))
	})
	return time.Since(began)
}

// log is what pod i's running container has written.
func (s *statefulSet) log(i int) string {
	s.t.Helper()
	p := s.pod(i)
	if p == nil {
		s.t.Fatalf("pod %d does not exist", i)
	}
	return p.c.Logs(s.t)
}

// logOnFailure logs every container's output, those that ended and those
// that run, when the test has failed. The test defers it: it must run
// before the containers are removed.
func (s *statefulSet) logOnFailure() {
	if !s.t.Failed() {
		return
	}
	s.mu.Lock()
	logs := slices.Clone(s.ended)
	pods := slices.Collect(maps.Values(s.pods))
	s.mu.Unlock()
	for _, p := range pods {
		out, err := containerLogs(p.c.Name)
		logs = append(logs, fmt.Sprintf("--- %s at %s (running): %v\n%s", p.name, p.ip, err, out))
	}
	s.t.Logf("the pods' logs:\n%s", strings.Join(logs, "\n"))
}

// The StatefulSet as the fault load drives it (loadTarget): each ordinal
// of the current replicas is a node; a node's clients go to its pod
// whatever its address, while it exists, and the load sends them requests
// only while the Services would (it is ready, and not terminating).

func (s *statefulSet) shardCount() int { return s.shards }

func (s *statefulSet) nodeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spec.Replicas
}

func (s *statefulSet) running(i int) bool {
	p := s.pod(i)
	return p != nil && !p.terminating.Load()
}

func (s *statefulSet) routed(i int) bool {
	p := s.pod(i)
	return p != nil && !p.terminating.Load() && p.probe.isReady()
}

func (s *statefulSet) clientOf(i int, tweak ...func(*redis.Options)) *redis.Client {
	s.mu.Lock()
	port := strconv.Itoa(s.spec.port(s.t, "redis"))
	addr := fmt.Sprintf("%s-%d.%s.%s.svc", s.spec.StatefulSet, i, s.spec.ServiceName, s.spec.Namespace)
	s.mu.Unlock()
	o := &redis.Options{
		Addr: net.JoinHostPort(addr, port), Password: s.password, Protocol: 2, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 2 * time.Second,
	}
	for _, f := range tweak {
		f(o)
	}
	dialer := net.Dialer{Timeout: o.DialTimeout}
	o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		p := s.pod(i)
		if p == nil {
			// No pod, no address: nothing is sent.
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return dialer.DialContext(ctx, network, net.JoinHostPort(p.ip, port))
	}
	rc := redis.NewClient(o)
	s.t.Cleanup(func() { rc.Close() })
	return rc
}

func (s *statefulSet) converge() string {
	var clients []*redis.Client
	for i := range s.nodeCount() {
		if s.running(i) {
			clients = append(clients, s.clientOf(i))
		}
	}
	return sameDigests(s.t, clients)
}

// ids maps the ids CLUSTER NODES and SHARDS give the nodes to the pods'
// names, for every ordinal below n.
func (s *statefulSet) ids(n int) map[string]string {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%s-%d", s.spec.StatefulSet, i))
	}
	return rlproc.ByRedisID(names...)
}
