package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/deploy/helm/test/chart"
)

// TestRenderPrintsRunnablePods runs the command as the StatefulSet
// emulation does, and checks that what it prints is enough to start each
// pod: args expanded, the member list, the password from -secret.
func TestRenderPrintsRunnablePods(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run([]string{"-release", "edge", "-namespace", "limits", "-set", "replicas=2",
		"-set", "auth.passwordSecret=rl-auth", "-secret", "rl-auth/password=s3cret"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var spec chart.PodSpec
	if err := json.Unmarshal(out.Bytes(), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.StatefulSet != "edge-rlserver" || spec.Replicas != 2 || len(spec.Pods) != 2 || len(spec.ClaimTemplates) != 1 {
		t.Fatalf("spec %+v", spec)
	}
	pod := spec.Pods[1]
	env := map[string]string{}
	for _, e := range pod.Env {
		env[e.Name] = e.Value
	}
	wantAddr := "edge-rlserver-1.edge-rlserver-headless.limits.svc"
	switch {
	case pod.Name != "edge-rlserver-1" || pod.Address != wantAddr:
		t.Errorf("pod %s at %s, want edge-rlserver-1 at %s", pod.Name, pod.Address, wantAddr)
	case env["RLSERVER_REQUIREPASS"] != "s3cret" || env["RLSERVER_NODE_ID"] != pod.Name:
		t.Errorf("env %v", env)
	case !strings.Contains(env["RLSERVER_CLUSTER"], "edge-rlserver-1@"+wantAddr+":6380@16380"):
		t.Errorf("RLSERVER_CLUSTER %s does not list the pod", env["RLSERVER_CLUSTER"])
	case !strings.Contains(strings.Join(pod.Args, " "), "--announce="+wantAddr+":6380@16380"):
		t.Errorf("args %q", pod.Args)
	}
}

// TestRenderPrintsWhatTheControllerDoes checks that the output says how
// the pods are started, stopped, probed and reached, as the emulation
// needs it: the policy, the grace period, the readiness probe, the preStop
// hook, and the Services with their target ports as numbers.
func TestRenderPrintsWhatTheControllerDoes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run([]string{"-release", "edge"}, &out); err != nil {
		t.Fatal(err)
	}
	var spec chart.PodSpec
	if err := json.Unmarshal(out.Bytes(), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.PodManagementPolicy != "Parallel" || spec.WhenScaled != "Retain" || spec.TerminationGracePeriodSeconds < 60 {
		t.Errorf("policy %q, claims %q when scaled, grace %d s", spec.PodManagementPolicy, spec.WhenScaled, spec.TerminationGracePeriodSeconds)
	}
	if p := spec.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.StrVal != "metrics" {
		t.Errorf("readiness probe %+v", p)
	}
	if l := spec.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Sleep == nil {
		t.Errorf("lifecycle %+v, want a preStop sleep", l)
	}
	services := map[string]chart.Service{}
	for _, s := range spec.Services {
		services[s.Name] = s
	}
	headless, join := services["edge-rlserver-headless"], services["edge-rlserver-join"]
	if !headless.Headless || !headless.PublishNotReadyAddresses || len(services) != 3 {
		t.Errorf("services %+v", spec.Services)
	}
	if join.Headless || len(join.Ports) != 1 || join.Ports[0].Port != 16380 || join.Ports[0].TargetPort != 16380 {
		t.Errorf("join Service %+v, want the bus port of the ready pods", join)
	}
}

// TestRenderNeedsTheSecrets checks that a Secret the pods read and that
// was not given is an error, not an empty password.
func TestRenderNeedsTheSecrets(t *testing.T) {
	t.Parallel()
	err := run([]string{"-set", "auth.passwordSecret=rl-auth"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "rl-auth") {
		t.Fatalf("err %v, want one naming the Secret rl-auth", err)
	}
}

// TestMain makes the chart's files the tests' inputs (chart.ReadInputs).
func TestMain(m *testing.M) {
	if err := chart.ReadInputs(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
