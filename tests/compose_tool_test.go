package tests

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deploy/compose.yaml run by podman-compose itself: up -d, stop -t, down -v,
// under a project name of the test process's own, with everything the
// project made removed when the test ends.

// composeProjectLabel is the label podman-compose puts on every container,
// volume and network of a project, valued with the project's name.
const composeProjectLabel = "io.podman.compose.project"

// composeToolTimeout bounds one podman-compose command: up starts three
// containers one after the other (2 s each here), stop waits for each in
// turn.
const composeToolTimeout = 5 * time.Minute

// composeProject is deploy/compose.yaml under podman-compose, as project
// name.
type composeProject struct {
	file string   // deploy/compose.yaml's absolute path
	name string   // -p: made unique with the process's prefix
	env  []string // the environment podman-compose interpolates the file with
}

// podmanCompose returns the compose file's project for podman-compose, nil
// when podman-compose is not installed (the test then runs the services
// itself), or fails the test then under RLSERVER_REQUIRE_TOOLS=1. The
// project's containers, volumes and networks are removed when the test
// ends: down -v first, then whatever still carries its label (the network
// 1.0.3's down leaves, or all of it after a failed up).
func podmanCompose(t *testing.T, env map[string]string) *composeProject {
	t.Helper()
	if _, err := exec.LookPath("podman-compose"); err != nil {
		if os.Getenv("RLSERVER_REQUIRE_TOOLS") == "1" {
			t.Fatalf("podman-compose: %v (and RLSERVER_REQUIRE_TOOLS=1); .ci/containers installs it", err)
		}
		t.Logf("podman-compose: %v: running the file's services with podman run, as compose would", err)
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := &composeProject{file: filepath.Join(root, "deploy", "compose.yaml"), name: owned + "compose", env: os.Environ()}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		p.env = append(p.env, k+"="+env[k]) // the last of a name wins
	}
	t.Cleanup(func() { p.remove(t) })
	return p
}

// run runs podman-compose on the project's file with args, and returns its
// output, standard output and error together.
func (p *composeProject) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), composeToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman-compose", append([]string{"-f", p.file, "-p", p.name}, args...)...)
	cmd.Env = p.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v", composeToolTimeout)
	}
	if err != nil {
		return out.String(), fmt.Errorf("podman-compose %s: %w:\n%s", strings.Join(args, " "), err, podmanNoise(out.String()))
	}
	return out.String(), nil
}

// up runs podman-compose up -d and returns the services' containers in
// their names' order, with the ports podman-compose published.
func (p *composeProject) up(t *testing.T, f composeFile) []*composeNode {
	t.Helper()
	if _, err := p.run("up", "-d"); err != nil {
		t.Fatal(err)
	}
	var nodes []*composeNode
	for _, service := range slices.Sorted(maps.Keys(f.Services)) {
		s := f.Services[service]
		names := p.list(t, "ps", "--all", "--format", "{{.Names}}", "--filter", "label=com.docker.compose.service="+service)
		if len(names) != 1 {
			t.Fatalf("podman-compose up: service %s has containers %q, want one", service, names)
		}
		c := &container{Name: names[0], ports: map[int]int{}}
		for _, published := range s.Ports {
			_, port, err := splitPublished(published)
			if err != nil {
				t.Fatalf("%s: port %q: %v", service, published, err)
			}
			addr := podman(t, "port", c.Name, fmt.Sprintf("%d/tcp", port))
			host, hostPort, err := net.SplitHostPort(addr)
			if n, _ := strconv.Atoi(hostPort); err != nil || host != "127.0.0.1" || n == 0 {
				t.Fatalf("%s: port %d published at %q, want 127.0.0.1:PORT", service, port, addr)
			}
			c.ports[port], _ = strconv.Atoi(hostPort)
		}
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil {
			t.Fatalf("%s: stop_grace_period %q: %v", service, s.StopGracePeriod, err)
		}
		nodes = append(nodes, &composeNode{container: c, service: service, stopGrace: grace})
	}
	return nodes
}

// stop runs podman-compose stop with the services' stop_grace_period
// (1.0.3 ignores it: without -t, podman stop's 10 s), and checks that each
// node stopped cleanly.
func (p *composeProject) stop(t *testing.T, nodes []*composeNode) {
	t.Helper()
	var grace time.Duration
	for _, n := range nodes {
		grace = max(grace, n.stopGrace)
	}
	began := time.Now()
	if _, err := p.run("stop", "-t", strconv.Itoa(int(grace.Seconds()))); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("podman-compose stop -t %d stopped the %d nodes, one after the other, in %.1fs", int(grace.Seconds()), len(nodes), took.Seconds())
	for _, n := range nodes {
		code, err := strconv.Atoi(podman(t, "inspect", "--format", "{{.State.ExitCode}}", n.Name))
		if err != nil {
			t.Fatalf("podman inspect %s: exit code: %v", n.Name, err)
		}
		checkComposeStop(t, n, code, took)
	}
}

// down runs podman-compose down -v and checks that the project's
// containers and volumes are gone; the network 1.0.3 leaves is logged
// (and removed when the test ends).
func (p *composeProject) down(t *testing.T, nodes []*composeNode) {
	t.Helper()
	if _, err := p.run("down", "-v", "-t", strconv.Itoa(int(nodes[0].stopGrace.Seconds()))); err != nil {
		t.Fatal(err)
	}
	if left := p.list(t, "ps", "--all", "--format", "{{.Names}}"); len(left) > 0 {
		t.Errorf("podman-compose down -v left containers %q", left)
	}
	if left := p.list(t, "volume", "ls", "--format", "{{.Name}}"); len(left) > 0 {
		t.Errorf("podman-compose down -v left volumes %q", left)
	}
	if left := p.list(t, "network", "ls", "--format", "{{.Name}}"); len(left) > 0 {
		t.Logf("podman-compose down -v left networks %q (1.0.3 does): removed at the test's end", left)
	}
}

// list runs a podman listing command, narrowed to the project's label, and
// returns the names it prints.
func (p *composeProject) list(t testing.TB, args ...string) []string {
	t.Helper()
	return strings.Fields(podman(t, append(args, "--filter", "label="+composeProjectLabel+"="+p.name)...))
}

// remove tears the project down whatever the test's outcome: down -v,
// then every container, volume and network that still carries the
// project's label.
func (p *composeProject) remove(t testing.TB) {
	if out, err := p.run("down", "-v", "-t", "0"); err != nil {
		t.Logf("%v\n%s", err, out)
	}
	filter := "label=" + composeProjectLabel + "=" + p.name
	for _, kind := range []struct{ list, remove []string }{
		{[]string{"ps", "--all", "--format", "{{.Names}}"}, []string{"rm", "--force", "--volumes", "--time", "0"}},
		{[]string{"volume", "ls", "--format", "{{.Name}}"}, []string{"volume", "rm", "--force"}},
		{[]string{"network", "ls", "--format", "{{.Name}}"}, []string{"network", "rm", "--force"}},
	} {
		out, err := podmanErr(podmanTimeout, append(kind.list, "--filter", filter)...)
		if err != nil {
			t.Logf("removing project %s: %v", p.name, err)
			continue
		}
		if names := strings.Fields(out); len(names) > 0 {
			if _, err := podmanErr(podmanTimeout, append(kind.remove, names...)...); err != nil {
				t.Errorf("removing project %s: %v", p.name, err)
			}
		}
	}
}
