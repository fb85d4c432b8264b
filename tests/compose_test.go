package tests

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
	"go.yaml.in/yaml/v3"
)

// deploy/compose.yaml, run by podman-compose (Debian 12's 1.0.3) when it is
// installed, as a user runs it; RLSERVER_REQUIRE_TOOLS=1 (CI) requires it.
// Without it the test reads the file and runs its services as compose
// would, with podman run: a network and the named volumes of its own, one
// container per service from the file's own settings.
//
// podman-compose 1.0.3 ignores stop_grace_period (it stops with podman
// stop's 10 s) and the file's name, and leaves its network behind at down:
// the test stops with -t (the file's grace), names the project itself (-p,
// its process's prefix), and removes whatever carries the project's label
// when it ends, whatever the outcome. Its containers find each other
// through aardvark-dns, which drops queries while it reloads (containers.md,
// section 2.4): the wait for the cluster allows for it. The emulation gives
// its network static addresses instead, and every container the services'
// names in /etc/hosts (--add-host). Both publish the host ports on free
// ports of the 127.0.0.1 the file names (its RLn_PORT variables).

// composeFile is the part of the compose specification deploy/compose.yaml
// uses. A key the test does not know fails the test: teach the emulation
// what it means, or keep it out of the file.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	// Extensions are the x- keys that hold what the services share.
	Extensions map[string]any `yaml:",inline"`
}

// composeService is one service of composeFile.
type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Hostname    string            `yaml:"hostname"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	// Restart is not applied: a node that exits during the test must fail
	// it, not be started again.
	Restart         string `yaml:"restart"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

// readCompose parses deploy/compose.yaml, strictly, and interpolates its
// values with env as compose does with the environment.
func readCompose(t *testing.T, env map[string]string) (composeFile, error) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	for key := range f.Extensions {
		if !strings.HasPrefix(key, "x-") {
			t.Fatalf("deploy/compose.yaml: top-level key %q: the test knows name, services, volumes and x- extensions", key)
		}
	}
	for name, s := range f.Services {
		fields := []*string{&s.Image, &s.Hostname, &s.Restart, &s.StopGracePeriod}
		for i := range s.Command {
			fields = append(fields, &s.Command[i])
		}
		for i := range s.Ports {
			fields = append(fields, &s.Ports[i])
		}
		for i := range s.Volumes {
			fields = append(fields, &s.Volumes[i])
		}
		for _, p := range fields {
			if *p, err = interpolate(*p, env); err != nil {
				return f, fmt.Errorf("service %s: %w", name, err)
			}
		}
		for k, v := range s.Environment {
			if s.Environment[k], err = interpolate(v, env); err != nil {
				return f, fmt.Errorf("service %s: %s: %w", name, k, err)
			}
		}
		f.Services[name] = s
	}
	return f, nil
}

// variable is a compose variable: ${NAME}, ${NAME:-default},
// ${NAME-default}, ${NAME:?message}, ${NAME?message}; or $$.
var variable = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate replaces the variables of s with their values in env, as
// compose does: a ${NAME:?message} whose variable is unset or empty is an
// error carrying message.
func interpolate(s string, env map[string]string) (string, error) {
	var err error
	out := variable.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		g := variable.FindStringSubmatch(m)
		value, set := env[g[1]]
		missing := !set || (strings.HasPrefix(g[2], ":") && value == "")
		switch {
		case !missing:
			return value
		case strings.HasSuffix(g[2], "-"):
			return g[3]
		case strings.HasSuffix(g[2], "?"):
			err = fmt.Errorf("%s: %s", g[1], g[3])
		}
		return ""
	})
	return out, err
}

// The compose file is the chart's style: three nodes with the same command
// (--cluster naming them all, --join, --bus-listen on every address,
// --shards), each told only its name and where it is reached, a password
// that must come from the environment, a named volume each at /data, every
// port published on 127.0.0.1 only, and the image deploy/build-image names
// by default (RLn_PORT and RLn_METRICS_PORT choose other host ports).
func TestComposeFileIsTheChartsStyle(t *testing.T) {
	if _, err := readCompose(t, nil); err == nil || !strings.Contains(err.Error(), "RLSERVER_REQUIREPASS") {
		t.Errorf("without RLSERVER_REQUIREPASS: %v, want compose to refuse to start", err)
	}
	f, err := readCompose(t, map[string]string{"RLSERVER_REQUIREPASS": "pw"})
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(f.Services))
	if !slices.Equal(names, []string{"rl-0", "rl-1", "rl-2"}) {
		t.Fatalf("services %v, want rl-0, rl-1 and rl-2", names)
	}
	root, _ := repoRoot()
	mainGo, err := os.ReadFile(filepath.Join(root, "cmd", "rlserver", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`(?m)^var version = "(.*)"$`).FindSubmatch(mainGo)
	wantCommand := []string{
		"--cluster", "rl-0@rl-0:6380,rl-1@rl-1:6380,rl-2@rl-2:6380", "--join", "rl-0:6380",
		"--bus-listen", "0.0.0.0:16380", "--shards", "3",
	}
	for i, name := range names {
		s := f.Services[name]
		if version == nil || s.Image != "localhost/rlserver:"+string(version[1]) {
			t.Errorf("%s: image %q, want deploy/build-image's default, localhost/rlserver:<main.go's version>", name, s.Image)
		}
		if !slices.Equal(s.Command, wantCommand) {
			t.Errorf("%s: command %q, want %q", name, s.Command, wantCommand)
		}
		wantEnv := map[string]string{"RLSERVER_NODE_ID": name, "RLSERVER_ANNOUNCE": name + ":6380", "RLSERVER_REQUIREPASS": "pw"}
		if fmt.Sprint(s.Environment) != fmt.Sprint(wantEnv) {
			t.Errorf("%s: environment %v, want %v", name, s.Environment, wantEnv)
		}
		if s.Hostname != name {
			t.Errorf("%s: hostname %q", name, s.Hostname)
		}
		if want := []string{"data-" + name + ":/data"}; !slices.Equal(s.Volumes, want) {
			t.Errorf("%s: volumes %q, want %q", name, s.Volumes, want)
		} else if _, ok := f.Volumes["data-"+name]; !ok {
			t.Errorf("%s: volume data-%s is not declared", name, name)
		}
		want := []string{fmt.Sprintf("127.0.0.1:%d:6380", 6380+i), fmt.Sprintf("127.0.0.1:%d:9380", 9380+i)}
		if !slices.Equal(s.Ports, want) {
			t.Errorf("%s: ports %q, want %q", name, s.Ports, want)
		}
		if d, err := time.ParseDuration(s.StopGracePeriod); err != nil || d < 30*time.Second {
			t.Errorf("%s: stop_grace_period %q: want time for an ordered shutdown", name, s.StopGracePeriod)
		}
	}
	// Ports taken on the machine: RLn_PORT and RLn_METRICS_PORT move them.
	moved, err := readCompose(t, map[string]string{"RLSERVER_REQUIREPASS": "pw", "RL1_PORT": "7381", "RL1_METRICS_PORT": "7391"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := moved.Services["rl-1"].Ports, []string{"127.0.0.1:7381:6380", "127.0.0.1:7391:9380"}; !slices.Equal(got, want) {
		t.Errorf("rl-1 with RL1_PORT=7381 RL1_METRICS_PORT=7391: ports %q, want %q", got, want)
	}
}

// The compose file's three nodes, run by podman-compose (or as compose
// would): they form a cluster (cluster_state:ok and every slot served, on
// every node), a decision taken through one node is counted through the
// others, every node passes its HEALTHCHECK, and each stops cleanly on
// SIGTERM within its stop_grace_period. Everything is removed afterwards.
func TestComposeClusterForms(t *testing.T) {
	t.Parallel()
	img := sharedImage(t)
	began := time.Now()
	step := func(what string) {
		t.Logf("%-52s %6.1fs", what, time.Since(began).Seconds())
	}
	password := fmt.Sprintf("compose-%d", time.Now().UnixNano())
	env := map[string]string{"RLSERVER_IMAGE": img.Tag, "RLSERVER_REQUIREPASS": password}
	for i, port := range rlproc.Ports(t, 6) {
		env[fmt.Sprintf("RL%d_%s", i/2, []string{"PORT", "METRICS_PORT"}[i%2])] = strconv.Itoa(port)
	}
	f, err := readCompose(t, env)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*composeNode
	project := podmanCompose(t, env)
	if project != nil {
		nodes = project.up(t, f)
		step("podman-compose up -d: 3 containers started")
	} else {
		nodes = runCompose(t, f)
		step("3 containers started (podman run, as compose would)")
	}

	ctx := context.Background()
	for _, n := range nodes {
		rc := n.Client(t, 6380, password)
		poll.Until(t, 90*time.Second, n.service+" to report cluster_state:ok and every slot ok", func() (bool, error) {
			info, err := rc.Do(ctx, "CLUSTER", "INFO").Text()
			if err != nil {
				return false, err
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return false, fmt.Errorf("CLUSTER INFO: %q", info)
			}
			return true, nil
		})
	}
	step("cluster_state:ok, cluster_slots_ok:16384 on each")
	checkComposeDecisions(t, nodes, password)
	step("decided through rl-0 and rl-2, read through the others")

	for _, n := range nodes {
		if health := n.WaitHealthy(t, time.Minute); health != "healthy" {
			t.Errorf("%s: health %q", n.service, health)
		}
	}
	step("HEALTHCHECK passes on each")

	// compose down stops the services at once. A node whose peers stop
	// with it cannot hand its leaderships over, and may wait for Raft's
	// goroutines (5 s a group, cluster/raftfix): 0.5-14 s measured here,
	// past podman's and docker's default of 10 s, hence stop_grace_period.
	if project != nil {
		project.stop(t, nodes)
		step("podman-compose stop -t: all stopped, exit 0")
		project.down(t, nodes)
		step("podman-compose down -v: containers and volumes gone")
		return
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			code, took := n.Stop(t, n.stopGrace)
			if checkComposeStop(t, n, code, took) {
				t.Logf("%s stopped in %.1fs", n.service, took.Seconds())
			}
		})
	}
	wg.Wait()
	step("all stopped, exit 0")
}

// checkComposeDecisions takes decisions through rl-0 and rl-2 and reads the
// count through the others: every node serves the cluster's one count.
func checkComposeDecisions(t *testing.T, nodes []*composeNode, password string) {
	t.Helper()
	decide := func(n *composeNode, cost int) []int64 {
		t.Helper()
		got, err := n.Client(t, 6380, password).Do(context.Background(), "RL.SLIDING", "compose-e2e", 100, 60000, "COST", cost).Int64Slice()
		if err != nil || len(got) != 5 {
			t.Fatalf("RL.SLIDING through %s: %v %v", n.service, got, err)
		}
		return got
	}
	if got := decide(nodes[0], 1); got[0] != 1 || got[2] != 99 {
		t.Fatalf("decided through rl-0: %v, want allowed with 99 remaining", got)
	}
	if got := decide(nodes[1], 0); got[2] != 99 {
		t.Errorf("read through rl-1: %v, want 99 remaining", got)
	}
	if got := decide(nodes[2], 1); got[0] != 1 || got[2] != 98 {
		t.Errorf("decided through rl-2: %v, want allowed with 98 remaining", got)
	}
	if got := decide(nodes[0], 0); got[2] != 98 {
		t.Errorf("read through rl-0: %v, want 98 remaining", got)
	}
}

// checkComposeStop checks that a node SIGTERM stopped exited 0 with its
// stopped line; took is how long the stop took, for the error.
func checkComposeStop(t *testing.T, n *composeNode, code int, took time.Duration) bool {
	t.Helper()
	logs := n.Logs(t)
	if code != 0 || !slices.Contains(jsonLogMessages(t, logs), "stopped") {
		t.Errorf("%s: exit %d after SIGTERM (%v); log:\n%s", n.service, code, took, logs)
		return false
	}
	return true
}

// composeNode is a service of the compose file, running.
type composeNode struct {
	*container
	service   string
	stopGrace time.Duration
}

// runCompose starts the services of f, in their names' order, on a network
// of their own with static addresses, each with its named volumes and its
// ports published at free ports of 127.0.0.1.
func runCompose(t *testing.T, f composeFile) []*composeNode {
	t.Helper()
	network := newNetwork(t, f.Name)
	names := slices.Sorted(maps.Keys(f.Services))
	hosts := map[string]string{}
	for i, name := range names {
		hosts[name] = network.IP(10 + i)
	}
	volumes := map[string]string{}
	for name := range f.Volumes {
		volumes[name] = newVolume(t, f.Name+"-"+name)
	}
	var nodes []*composeNode
	for _, name := range names {
		s := f.Services[name]
		spec := containerSpec{
			Name: f.Name + "-" + name, Image: s.Image, Args: s.Command, Env: s.Environment,
			Hostname: s.Hostname, Network: &network, IP: hosts[name], Hosts: hosts,
		}
		for _, v := range s.Volumes {
			source, target, ok := strings.Cut(v, ":")
			if !ok || volumes[source] == "" {
				t.Fatalf("%s: volume %q: the test knows named volumes the file declares", name, v)
			}
			spec.Volumes = append(spec.Volumes, volumes[source]+":"+target)
		}
		for _, p := range s.Ports {
			host, port, err := splitPublished(p)
			if err != nil || host != "127.0.0.1" {
				t.Fatalf("%s: port %q: want 127.0.0.1:HOSTPORT:PORT (%v)", name, p, err)
			}
			spec.Publish = append(spec.Publish, port)
		}
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil {
			t.Fatalf("%s: stop_grace_period %q: %v", name, s.StopGracePeriod, err)
		}
		spec.StopTimeout = grace
		nodes = append(nodes, &composeNode{container: startContainer(t, spec), service: name, stopGrace: grace})
	}
	return nodes
}

// splitPublished reads a compose port, HOSTIP:HOSTPORT:PORT (IPv4), and
// returns the host address and the container's port.
func splitPublished(p string) (host string, port int, err error) {
	parts := strings.Split(strings.TrimSuffix(p, "/tcp"), ":")
	if len(parts) != 3 || net.ParseIP(parts[0]) == nil {
		return "", 0, fmt.Errorf("not HOSTIP:HOSTPORT:PORT")
	}
	port, err = strconv.Atoi(parts[2])
	return parts[0], port, err
}
