//go:build linux

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The chart's StatefulSet, run without Kubernetes for the StatefulSet
// emulation (statefulset_test.go): deploy/helm/test's render prints the
// pod spec helm renders, and statefulSet (statefulset_pods_test.go) does
// with it what the StatefulSet controller and the kubelet would, in podman
// containers of the image.

// renderedSpec is what the emulation reads of render's output (the type
// chart.PodSpec in deploy/helm/test, a module of its own that the tests
// cannot import).
type renderedSpec struct {
	StatefulSet                   string
	Namespace                     string
	ServiceName                   string
	Replicas                      int
	PodManagementPolicy           string
	WhenScaled                    string
	TerminationGracePeriodSeconds int
	ReadinessProbe                *struct {
		HTTPGet *struct {
			Path string
			Port json.RawMessage // a number or the name of a container port
		}
		TimeoutSeconds   int
		PeriodSeconds    int
		FailureThreshold int
	}
	Lifecycle *struct {
		PreStop *struct {
			Sleep *struct{ Seconds int }
			// Exec and HTTPGet are hooks the emulation does not run:
			// their presence fails the test.
			Exec    json.RawMessage
			HTTPGet json.RawMessage
		}
	}
	PodSecurityContext *struct {
		RunAsUser, RunAsGroup, FSGroup *int
	}
	SecurityContext *struct {
		Capabilities *struct{ Drop []string }
		// RunAsUser, when set, is the container's own, over the pod's.
		RunAsUser                *int
		ReadOnlyRootFilesystem   *bool
		AllowPrivilegeEscalation *bool
	}
	Services []struct {
		Name                     string
		Headless                 bool
		PublishNotReadyAddresses bool
		Ports                    []struct {
			Name             string
			Port, TargetPort int
		}
	}
	Image   string
	Command []string
	Ports   []struct {
		Name          string
		ContainerPort int
	}
	VolumeMounts []struct {
		Name, MountPath string
	}
	ClaimTemplates []string
	Pods           []renderedPod
}

// renderedPod is one pod of renderedSpec: its command, args and
// environment as the kubelet gives them.
type renderedPod struct {
	Name, Address string
	Command, Args []string
	Env           []struct{ Name, Value string }
}

// port is the container's port called name.
func (s *renderedSpec) port(t *testing.T, name string) int {
	t.Helper()
	for _, p := range s.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("the rendered container has no port %q: %+v", name, s.Ports)
	return 0
}

// check fails the test for what the emulation cannot do as Kubernetes
// would: it runs a StatefulSet of Parallel pods, with an HTTP readiness
// probe, a preStop sleep at most, and each volume mount a claim.
func (s *renderedSpec) check(t *testing.T) {
	t.Helper()
	if s.PodManagementPolicy != "Parallel" {
		t.Errorf("podManagementPolicy %q: the emulation starts and stops pods in parallel", s.PodManagementPolicy)
	}
	if s.WhenScaled != "Retain" {
		t.Errorf("whenScaled %q: the emulation keeps a scaled-down pod's volume", s.WhenScaled)
	}
	if p := s.ReadinessProbe; p == nil || p.HTTPGet == nil || p.FailureThreshold < 1 || p.TimeoutSeconds < 1 {
		t.Errorf("readiness probe %+v: the emulation runs an HTTP GET probe", p)
	}
	if l := s.Lifecycle; l != nil && l.PreStop != nil && (l.PreStop.Exec != nil || l.PreStop.HTTPGet != nil) {
		t.Errorf("preStop %+v: the emulation runs a sleep (the image has no shell)", l.PreStop)
	}
	for _, m := range s.VolumeMounts {
		if !slices.Contains(s.ClaimTemplates, m.Name) {
			t.Errorf("volume mount %s at %s: the emulation mounts claims only (%v)", m.Name, m.MountPath, s.ClaimTemplates)
		}
	}
	if len(s.Pods) != s.Replicas {
		t.Errorf("%d pods rendered for %d replicas", len(s.Pods), s.Replicas)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// probePort is the readiness probe's port number.
func (s *renderedSpec) probePort(t *testing.T) int {
	t.Helper()
	raw := s.ReadinessProbe.HTTPGet.Port
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		t.Fatalf("readiness probe port %s: %v", raw, err)
	}
	return s.port(t, name)
}

// preStopSleep is how long the kubelet waits before it sends SIGTERM.
func (s *renderedSpec) preStopSleep() time.Duration {
	if l := s.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		return time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	return 0
}

// securityFlags are podman run's flags for the pod's and the container's
// security contexts. fsGroup has none: a new podman volume takes the owner
// of the image's directory it is mounted on (/data: 65532), and a pod that
// could not write its volume would fail the test.
func (s *renderedSpec) securityFlags() []string {
	var flags []string
	user, group := -1, -1
	if p := s.PodSecurityContext; p != nil {
		if p.RunAsUser != nil {
			user = *p.RunAsUser
		}
		if p.RunAsGroup != nil {
			group = *p.RunAsGroup
		}
	}
	if c := s.SecurityContext; c != nil {
		if c.RunAsUser != nil {
			user = *c.RunAsUser
		}
		if c.Capabilities != nil {
			for _, cap := range c.Capabilities.Drop {
				flags = append(flags, "--cap-drop", cap)
			}
		}
		if c.ReadOnlyRootFilesystem != nil && *c.ReadOnlyRootFilesystem {
			flags = append(flags, "--read-only")
		}
		if c.AllowPrivilegeEscalation != nil && !*c.AllowPrivilegeEscalation {
			flags = append(flags, "--security-opt", "no-new-privileges")
		}
	}
	switch {
	case user >= 0 && group >= 0:
		flags = append(flags, "--user", fmt.Sprintf("%d:%d", user, group))
	case user >= 0:
		flags = append(flags, "--user", strconv.Itoa(user))
	}
	return flags
}

// chartRenderer renders the chart at a number of replicas with fixed
// values, through deploy/helm/test's render built once.
type chartRenderer struct {
	bin, helm string
	args      []string // -namespace, -set and -secret
	mu        sync.Mutex
	byReplica map[int]*renderedSpec
}

// newChartRenderer builds render and returns a renderer of the chart with
// args (render's flags, replicas left out). It needs helm: without it the
// test is skipped, unless RLSERVER_REQUIRE_TOOLS=1.
func newChartRenderer(t *testing.T, args ...string) *chartRenderer {
	t.Helper()
	helm := requireTool(t, "helm", "HELM")
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := &chartRenderer{bin: filepath.Join(t.TempDir(), "render"), helm: helm, args: args, byReplica: map[int]*renderedSpec{}}
	ctx, cancel := context.WithTimeout(context.Background(), podmanBuildTimeout)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", r.bin, "./render")
	build.Dir = filepath.Join(root, "deploy", "helm", "test")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building deploy/helm/test's render: %v\n%s", err, out)
	}
	return r
}

// at renders the chart with replicas.
func (r *chartRenderer) at(t *testing.T, replicas int) *renderedSpec {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.byReplica[replicas]; s != nil {
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, append(slices.Clone(r.args), "-set", fmt.Sprintf("replicas=%d", replicas))...)
	cmd.Env = append(os.Environ(), "HELM="+r.helm)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("render %v: %v\n%s", r.args, err, stderr.String())
	}
	s := &renderedSpec{}
	if err := json.Unmarshal(stdout.Bytes(), s); err != nil {
		t.Fatalf("render's output: %v\n%s", err, stdout.String())
	}
	s.check(t)
	r.byReplica[replicas] = s
	return s
}

// readiness is the kubelet's readiness probe of one pod: an HTTP GET of
// url every period, ready from the first success until failureThreshold
// failures in a row.
type readiness struct {
	url       string
	timeout   time.Duration
	period    time.Duration
	threshold int

	mu    sync.Mutex
	ready bool
	stop  chan struct{}
	done  chan struct{}
}

// startReadiness probes url until stopped.
func startReadiness(url string, timeout, period time.Duration, threshold int) *readiness {
	r := &readiness{url: url, timeout: timeout, period: period, threshold: threshold, stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

// run probes until stopped.
func (r *readiness) run() {
	defer close(r.done)
	client := &http.Client{Timeout: r.timeout}
	failures := 0
	tick := time.NewTicker(r.period)
	defer tick.Stop()
	for {
		ok := r.probe(client)
		r.mu.Lock()
		switch {
		case ok:
			failures = 0
			r.ready = true
		default:
			if failures++; failures >= r.threshold {
				r.ready = false
			}
		}
		r.mu.Unlock()
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

// probe is one GET: 2xx or 3xx passes, as the kubelet's.
func (r *readiness) probe(client *http.Client) bool {
	resp, err := client.Get(r.url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

// isReady is the probe's verdict.
func (r *readiness) isReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

// close stops the probe; it is not ready after.
func (r *readiness) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	r.mu.Lock()
	r.ready = false
	r.mu.Unlock()
}
