package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// Containers for the tests, with rootful podman: the image deploy/build-image
// builds, networks whose containers have static addresses, named volumes,
// and containers that publish their ports on 127.0.0.1. The image tests,
// the compose file's cluster and the StatefulSet emulation share them.
//
// Podman runs only as root here (/work/shared/reference/containers.md), and
// only once .ci/containers has written its containers.conf drop-in (this
// machine cannot raise rlimits, and crun refuses its cgroups). Without
// podman or root the tests are skipped, unless RLSERVER_REQUIRE_TOOLS=1
// says the machine must have them (CI).
//
// Everything made is removed when the test that made it ends, whatever its
// outcome, and the image when the package's tests end (TestMain). Every
// name starts with containerPrefix and the test process's id, so what a
// process killed before its cleanup left behind is removed by the next one
// (removeStaleContainers), and what another process still running made
// (another engineer's tests, on a shared machine) is left alone.

// containerPrefix starts the name of every container, volume, network and
// image the tests make, followed by the process's id.
const containerPrefix = "rltc"

// podmanTimeout bounds one podman command; podmanBuildTimeout bounds
// deploy/build-image, which compiles rlserver for two architectures (about
// two minutes with a cold build cache on two cores, seconds when warm).
const (
	podmanTimeout      = 2 * time.Minute
	podmanBuildTimeout = 10 * time.Minute
)

// owned is the prefix of this process's names: rltc<pid>.
var owned = containerPrefix + strconv.Itoa(os.Getpid())

// requirePodman skips the test without rootful podman, or fails it when
// RLSERVER_REQUIRE_TOOLS=1; the first call removes what killed test
// processes left behind.
func requirePodman(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("podman")
	if err == nil && os.Geteuid() != 0 {
		err = fmt.Errorf("euid %d: the tests need rootful podman (static addresses, published ports)", os.Geteuid())
	}
	if err != nil {
		if os.Getenv("RLSERVER_REQUIRE_TOOLS") == "1" {
			t.Fatalf("podman: %v (and RLSERVER_REQUIRE_TOOLS=1); .ci/containers installs it", err)
		}
		t.Skipf("podman: %v", err)
	}
	staleOnce.Do(removeStaleContainers)
}

// podman runs podman with args, bounded by podmanTimeout, and returns its
// standard output, trimmed; a failure fails the test with podman's
// standard error.
func podman(t testing.TB, args ...string) string {
	t.Helper()
	out, err := podmanErr(podmanTimeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// podmanErr is podman for a command that may fail: the error carries its
// exit status and standard error.
func podmanErr(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("podman %s: killed after %v", strings.Join(args, " "), timeout)
	}
	if err != nil {
		msg := podmanNoise(stderr.String())
		if strings.Contains(msg, "error setting rlimit") || strings.Contains(msg, "cgroups in hybrid mode") {
			msg += "\n(run .ci/containers: it writes the containers.conf drop-in this machine needs)"
		}
		return stdout.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// podmanNoise drops what podman always says on a machine without syslog
// or systemd (which runs no health check timers: the tests run the checks
// themselves).
func podmanNoise(stderr string) string {
	var keep []string
	for _, line := range strings.Split(stderr, "\n") {
		if line == "" || strings.Contains(line, "failed to connect to syslog") || strings.Contains(line, "systemd") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// The image the tests run, built once by the first test that asks for it
// and removed by TestMain.
var (
	imageOnce  sync.Once
	imageBuilt testImage
	imageErr   error
	imagesMade []string // every tag and image id built, for removeTestImages
	imagesMu   sync.Mutex
)

// testImage is an image deploy/build-image built for the tests.
type testImage struct {
	Tag     string
	Version string // what it was built as (VERSION)
	Output  string // deploy/build-image's standard output
	Took    time.Duration
}

// testImageVersion is the VERSION the tests build their images as.
const testImageVersion = "0.0.0-e2e"

// sharedImage is this machine's image of rlserver, built by
// deploy/build-image as a user would (both architectures' binaries
// checked), once for every test of the process.
func sharedImage(t *testing.T) testImage {
	t.Helper()
	requirePodman(t)
	imageOnce.Do(func() {
		imageBuilt, imageErr = buildImage(owned+"/rlserver:"+runtime.GOARCH, runtime.GOARCH, "amd64 arm64")
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageBuilt
}

// buildImage runs deploy/build-image for arch with the binaries of arches,
// as tag under localhost/.
func buildImage(tag, arch, arches string) (testImage, error) {
	img := testImage{Tag: "localhost/" + tag, Version: testImageVersion}
	imagesMu.Lock()
	imagesMade = append(imagesMade, img.Tag)
	imagesMu.Unlock()
	root, err := repoRoot()
	if err != nil {
		return img, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), podmanBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy", "build-image"), img.Tag)
	cmd.Env = append(os.Environ(), "VERSION="+img.Version, "ARCH="+arch, "ARCHES="+arches, "CONTAINER_TOOL=podman")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err = cmd.Run()
	img.Output, img.Took = stdout.String(), time.Since(began)
	if err != nil {
		return img, fmt.Errorf("deploy/build-image %s: %w\nstdout:\n%s\nstderr:\n%s", img.Tag, err, stdout.String(), podmanNoise(stderr.String()))
	}
	// By id too: a test run again (-count) builds its tag again, and the
	// image the tag leaves is removed all the same.
	id, err := podmanErr(podmanTimeout, "image", "inspect", "--format", "{{.Id}}", img.Tag)
	if err != nil {
		return img, err
	}
	imagesMu.Lock()
	imagesMade = append(imagesMade, id)
	imagesMu.Unlock()
	return img, nil
}

// removeTestImages removes the images this process built; TestMain calls
// it once every test has ended.
func removeTestImages() {
	imagesMu.Lock()
	defer imagesMu.Unlock()
	for _, image := range imagesMade {
		_, _ = podmanErr(podmanTimeout, "rmi", "--force", image) // may never have been built, or be gone
	}
}

// repoRoot is the repository's root: the directory above tests/.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Dir(wd), nil
}

// A network the test makes, without DNS: its containers find each other
// through the host names --add-host writes in their /etc/hosts, at static
// addresses. aardvark-dns 1.4 (Debian 12) drops queries while it reloads,
// which it does whenever a container joins or leaves, so that a name could
// take up to 60 s to resolve; static addresses make every start and restart
// take the same time (containers.md, section 2.4).
type testNetwork struct {
	Name    string
	Prefix  string // the /24's first three bytes: "10.89.3"
	Gateway string // the host's address on it
}

// IP is the address of the network's host number n (from 2; 1 is the
// gateway).
func (n testNetwork) IP(host int) string { return fmt.Sprintf("%s.%d", n.Prefix, host) }

// newNetwork makes a bridge network with a /24 that podman chooses among
// those free, removed when the test ends.
func newNetwork(t *testing.T, name string) testNetwork {
	t.Helper()
	full := owned + "-" + name
	podman(t, "network", "create", "--disable-dns", full)
	t.Cleanup(func() { podmanErr(podmanTimeout, "network", "rm", "--force", full) })
	var nets []struct {
		Subnets []struct {
			Subnet  string `json:"subnet"`
			Gateway string `json:"gateway"`
		} `json:"subnets"`
	}
	if err := json.Unmarshal([]byte(podman(t, "network", "inspect", full)), &nets); err != nil {
		t.Fatalf("podman network inspect %s: %v", full, err)
	}
	if len(nets) != 1 || len(nets[0].Subnets) == 0 {
		t.Fatalf("podman network inspect %s: no subnet: %+v", full, nets)
	}
	ip, ipnet, err := net.ParseCIDR(nets[0].Subnets[0].Subnet)
	if ones, _ := ipnet.Mask.Size(); err != nil || ip.To4() == nil || ones != 24 {
		t.Fatalf("network %s: subnet %s, want an IPv4 /24 (%v)", full, nets[0].Subnets[0].Subnet, err)
	}
	v4 := ip.To4()
	return testNetwork{Name: full, Prefix: fmt.Sprintf("%d.%d.%d", v4[0], v4[1], v4[2]), Gateway: nets[0].Subnets[0].Gateway}
}

// newVolume makes a named volume, removed when the test ends, and returns
// its name.
func newVolume(t *testing.T, name string) string {
	t.Helper()
	full := owned + "-" + name
	podman(t, "volume", "create", full)
	t.Cleanup(func() { podmanErr(podmanTimeout, "volume", "rm", "--force", full) })
	return full
}

// containerSpec is how to run one container, as podman run says it.
type containerSpec struct {
	Name     string            // made unique with the process's prefix
	Image    string            // the image
	Args     []string          // after the image: its arguments
	Env      map[string]string // -e
	Hostname string            // --hostname
	Network  *testNetwork      // --network, nil for podman's default
	IP       string            // --ip on Network
	Hosts    map[string]string // --add-host name:ip
	Volumes  []string          // -v volume:path (names as newVolume returns them)
	// Publish are the container's TCP ports to publish, each on 127.0.0.1
	// at a free port of this machine (container.Port says which).
	Publish     []int
	StopTimeout time.Duration // --stop-timeout: SIGTERM, then SIGKILL after this long
	// Extra are more flags for podman run (--read-only, --cap-drop ALL).
	Extra []string
}

// container is a container a test started.
type container struct {
	Name  string
	ports map[int]int // container port -> port on 127.0.0.1
}

// startContainer runs spec detached and returns once podman has started
// it; it is removed, with its anonymous volumes, when the test ends.
func startContainer(t *testing.T, spec containerSpec) *container {
	t.Helper()
	c, err := runContainer(t, spec, rlproc.Ports(t, len(spec.Publish)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runContainer is startContainer with the ports of 127.0.0.1 to publish
// spec.Publish at, for a goroutine of the test: it returns podman's error
// rather than failing the test.
func runContainer(t *testing.T, spec containerSpec, hostPorts []int) (*container, error) {
	c := &container{Name: owned + "-" + spec.Name, ports: map[int]int{}}
	args := []string{"run", "--detach", "--name", c.Name}
	if spec.Hostname != "" {
		args = append(args, "--hostname", spec.Hostname)
	}
	if spec.Network != nil {
		args = append(args, "--network", spec.Network.Name)
	}
	if spec.IP != "" {
		args = append(args, "--ip", spec.IP)
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Hosts)) {
		args = append(args, "--add-host", name+":"+spec.Hosts[name])
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Env)) {
		args = append(args, "--env", name+"="+spec.Env[name])
	}
	for _, v := range spec.Volumes {
		args = append(args, "--volume", v)
	}
	for i, port := range spec.Publish {
		c.ports[port] = hostPorts[i]
		args = append(args, "--publish", fmt.Sprintf("127.0.0.1:%d:%d", hostPorts[i], port))
	}
	if spec.StopTimeout > 0 {
		args = append(args, "--stop-timeout", strconv.Itoa(int(spec.StopTimeout.Seconds())))
	}
	args = append(append(args, spec.Extra...), spec.Image)
	args = append(args, spec.Args...)
	t.Cleanup(func() { podmanErr(podmanTimeout, "rm", "--force", "--volumes", "--time", "0", c.Name) })
	if _, err := podmanErr(podmanTimeout, args...); err != nil {
		return nil, err
	}
	return c, nil
}

// Addr is where the container's port is published: 127.0.0.1:<free port>.
func (c *container) Addr(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[port]))
}

// Client is a RESP2 client of the container's published port, with
// password, without retries (a decision is sent once), closed when the test
// ends.
func (c *container) Client(t *testing.T, port int, password string) *redis.Client {
	rc := redis.NewClient(&redis.Options{
		Addr: c.Addr(port), Password: password, Protocol: 2, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 2 * time.Second,
	})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// Logs is what the container wrote, standard output and error together.
func (c *container) Logs(t testing.TB) string {
	t.Helper()
	out, err := containerLogs(c.Name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// containerLogs is what container name wrote, standard output and error
// together.
func containerLogs(name string) (string, error) {
	out, err := exec.Command("podman", "logs", name).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("podman logs %s: %w: %s", name, err, out)
	}
	return podmanNoise(string(out)), nil
}

// LogStreams is what the container wrote on its standard output and on its
// standard error, apart (podman logs keeps the two streams apart).
func (c *container) LogStreams(t testing.TB) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("podman", "logs", c.Name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("podman logs %s: %v: %s", c.Name, err, errb.String())
	}
	return out.String(), podmanNoise(errb.String())
}

// Stop sends the stop signal (SIGTERM) and waits until the container has
// exited, killing it after timeout; it returns the exit code and how long
// it took.
func (c *container) Stop(t testing.TB, timeout time.Duration) (code int, took time.Duration) {
	t.Helper()
	began := time.Now()
	if _, err := podmanErr(timeout+podmanTimeout, "stop", "--time", strconv.Itoa(int(timeout.Seconds())), c.Name); err != nil {
		t.Fatal(err)
	}
	took = time.Since(began)
	code, err := strconv.Atoi(podman(t, "inspect", "--format", "{{.State.ExitCode}}", c.Name))
	if err != nil {
		t.Fatalf("podman inspect %s: exit code: %v", c.Name, err)
	}
	return code, took
}

// Exec runs a command in the running container and returns its output.
func (c *container) Exec(t testing.TB, cmd ...string) string {
	t.Helper()
	return podman(t, append([]string{"exec", c.Name}, cmd...)...)
}

// WaitHealthy runs the image's HEALTHCHECK (podman healthcheck run: no
// systemd here runs it on its own) until it passes, and returns podman's
// record of the container's health.
func (c *container) WaitHealthy(t testing.TB, timeout time.Duration) string {
	t.Helper()
	poll.Until(t, timeout, c.Name+"'s HEALTHCHECK to pass", func() (bool, error) {
		_, err := podmanErr(podmanTimeout, "healthcheck", "run", c.Name)
		return err == nil, err
	})
	return podman(t, "inspect", "--format", "{{.State.Health.Status}}", c.Name)
}

// removeStaleContainers removes the containers, volumes, networks and
// images whose names say a test process made them that no longer runs.
func removeStaleContainers() {
	stale := func(name string) bool {
		name = strings.TrimPrefix(name, "localhost/")
		rest, ok := strings.CutPrefix(name, containerPrefix)
		if !ok {
			return false
		}
		digits := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
		pid, err := strconv.Atoi(digits)
		return err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	list := func(args ...string) []string {
		out, err := podmanErr(podmanTimeout, args...)
		if err != nil {
			return nil
		}
		var names []string
		for _, name := range strings.Fields(out) {
			if stale(name) {
				names = append(names, name)
			}
		}
		return names
	}
	remove := func(names []string, args ...string) {
		if len(names) > 0 {
			_, _ = podmanErr(podmanTimeout, append(args, names...)...)
		}
	}
	// Containers first: they hold the volumes, networks and images.
	remove(list("ps", "--all", "--format", "{{.Names}}"), "rm", "--force", "--volumes", "--time", "0")
	remove(list("volume", "ls", "--format", "{{.Name}}"), "volume", "rm", "--force")
	remove(list("network", "ls", "--format", "{{.Name}}"), "network", "rm", "--force")
	remove(list("images", "--format", "{{.Repository}}:{{.Tag}}"), "rmi", "--force")
}

// staleOnce removes what killed test processes left, once a process.
var staleOnce sync.Once

// imageInfo is what the tests read of podman image inspect.
type imageInfo struct {
	Size         int64
	Architecture string
	Os           string
	Config       struct {
		User         string
		Env          []string
		Entrypoint   []string
		Cmd          []string
		ExposedPorts map[string]struct{}
		Volumes      map[string]struct{}
		Labels       map[string]string
		StopSignal   string
	}
	Healthcheck struct {
		Test []string
	}
	RootFS struct {
		Layers []string
	}
}

// inspectImage reads the image's configuration.
func inspectImage(t testing.TB, tag string) imageInfo {
	t.Helper()
	var infos []imageInfo
	if err := json.Unmarshal([]byte(podman(t, "image", "inspect", tag)), &infos); err != nil || len(infos) != 1 {
		t.Fatalf("podman image inspect %s: %d images, %v", tag, len(infos), err)
	}
	return infos[0]
}
