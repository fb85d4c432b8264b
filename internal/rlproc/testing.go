package rlproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The thin helpers of the tests: a failed start fails the test, and every
// process started is stopped when the test ends, the test failing if it
// died while it ran or does not exit 0 on SIGTERM.

var (
	buildDir  string // made by Main, removed after the tests
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Main runs a package's tests and removes the binary Binary built for
// them. Call it from TestMain: os.Exit(rlproc.Main(m)).
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rlproc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlproc:", err)
		return 1
	}
	buildDir = dir
	defer os.RemoveAll(dir)
	return m.Run()
}

// Binary returns the rlserver binary the tests run: the one RLSERVER_BIN
// names, or ./cmd/rlserver built the first time it is asked for, so tests
// that start no process never pay for the build.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("RLSERVER_BIN"); p != "" {
			binPath = p
			return
		}
		if buildDir == "" {
			buildErr = errors.New("rlproc.Main was not called from TestMain")
			return
		}
		binPath = filepath.Join(buildDir, "rlserver")
		// By import path, so it builds from any package's directory.
		build := exec.Command("go", "build", "-o", binPath, "github.com/rlserver/rlserver/cmd/rlserver")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/rlserver: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Launch starts rlserver as cfg says (Bin, if empty, is Binary) and
// returns once it is ready, failing the test if it is not.
func Launch(t testing.TB, cfg Config) *Process {
	t.Helper()
	cfg.Bin = orBinary(t, cfg.Bin)
	p, err := Start(cfg, StartTimeout)
	return ready(t, p, err)
}

// LaunchOnPorts is Launch for a configuration that gives rlserver ports of
// the test's choosing (--metrics-port, --grpc-port, a TLS port): config
// builds it from n free ports, which are returned with the process. A port
// free when chosen can be taken before rlserver binds it (the kernel hands
// it to another process's connection, say): the start is then tried again
// on other ports, up to three times.
func LaunchOnPorts(t testing.TB, n int, config func(ports []int) Config) (*Process, []int) {
	t.Helper()
	for try := 1; ; try++ {
		ports := Ports(t, n)
		cfg := config(ports)
		cfg.Bin = orBinary(t, cfg.Bin)
		p, err := Start(cfg, StartTimeout)
		if errors.Is(err, ErrAddrInUse) && try < 3 {
			t.Logf("start %d of 3 on ports %v: %v", try, ports, err)
			continue
		}
		return ready(t, p, err), ports
	}
}

// Spawn is Launch for a start that may fail: it returns once the process
// is ready, or once it has exited (exited true), to be asked for its exit
// code and log.
func Spawn(t testing.TB, cfg Config) (p *Process, exited bool) {
	t.Helper()
	cfg.Bin = orBinary(t, cfg.Bin)
	p, err := Start(cfg, StartTimeout)
	return p, exitedOrReady(t, p, err)
}

// orBinary is bin, or Binary if bin is empty.
func orBinary(t testing.TB, bin string) string {
	t.Helper()
	if bin == "" {
		return Binary(t)
	}
	return bin
}

// ready ends Launch: a start that failed fails the test, and a process
// that runs is checked when the test ends.
func ready(t testing.TB, p *Process, err error) *Process {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.check(t) })
	return p
}

// exitedOrReady ends Spawn: it reports whether the process exited before
// it was ready; any other failure fails the test, and a process that runs
// is checked when the test ends.
func exitedOrReady(t testing.TB, p *Process, err error) bool {
	t.Helper()
	if errors.Is(err, errExited) {
		return true
	}
	ready(t, p, err)
	return false
}

// check is the end of a test for a process it started: one that died
// while the test ran, or does not exit 0 on SIGTERM, fails the test.
func (p *Process) check(t testing.TB) {
	if !p.running() {
		if !p.exitExpected() {
			t.Errorf("rlserver %s died during the test (%v); log:\n%s", p.Addr, p.err, p.Log())
		}
		return
	}
	if code := p.Stop(t); code != 0 {
		t.Errorf("rlserver %s exited %d after SIGTERM; log:\n%s", p.Addr, code, p.Log())
	}
}

// Stop sends SIGTERM and returns the exit code once the process has
// exited, failing the test if it outlives StopTimeout (it is then killed).
func (p *Process) Stop(t testing.TB) int {
	t.Helper()
	code, err := p.Terminate(StopTimeout)
	if err != nil {
		t.Errorf("rlserver %s: %v; log:\n%s", p.Addr, err, p.Log())
	}
	return code
}

// Client returns a go-redis client of p speaking RESP protocol (2 or 3),
// closed when the test ends. Retries are off, so each command is sent
// exactly once: a retried decision would spend budget twice. tweak may
// change the options first.
func (p *Process) Client(t testing.TB, protocol int, tweak ...func(*redis.Options)) *redis.Client {
	opt := &redis.Options{Addr: p.Addr, Protocol: protocol, MaxRetries: -1}
	for _, f := range tweak {
		f(opt)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// Ports is freePorts for a test.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// ClosedAddr is a loopback address nothing listens on: connecting to it is
// refused at once, as to a dead rlserver.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", Ports(t, 1)[0])
}

// NewCluster plans a cluster (PlanCluster) in a temporary directory of the
// test's, Bin defaulting to Binary, without starting it, so a test can
// change a node's Config first.
func NewCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	cfg.Bin = orBinary(t, cfg.Bin)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := PlanCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.closeClients)
	return c
}

// StartCluster is NewCluster, then LaunchAsPlanned.
func StartCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	c := NewCluster(t, cfg)
	c.LaunchAsPlanned(t)
	return c
}

// Launch starts every node that is not running, all at once, each stopped
// and checked when the test ends as Launch's processes are, and waits
// until the cluster is healthy (WaitHealthy).
func (c *Cluster) Launch(t testing.TB) {
	t.Helper()
	c.launch(t, false)
}

// LaunchAsPlanned is Launch for a cluster none of whose nodes has run, with
// the addresses PlanCluster gave them (a test may have added flags, but
// nothing that depends on those addresses): a port free when planned can be
// taken before a node binds it, and the start is then made again on other
// ports (replan), up to three times, as LaunchOnPorts does for one server.
func (c *Cluster) LaunchAsPlanned(t testing.TB) {
	t.Helper()
	for _, n := range c.Nodes {
		if n.Process() != nil {
			t.Fatalf("LaunchAsPlanned: %s has run already", n.ID)
		}
	}
	c.launch(t, true)
}

// launch is Launch, starting again on other ports when replan allows it.
func (c *Cluster) launch(t testing.TB, replan bool) {
	t.Helper()
	var down []*Node
	for _, n := range c.Nodes {
		if !n.Running() {
			down = append(down, n)
		}
	}
	err := c.Start(StartTimeout)
	for try := 2; replan && errors.Is(err, ErrAddrInUse) && try <= 3; try++ {
		t.Logf("start %d of 3 of the cluster: %v", try-1, err)
		for _, n := range c.Nodes {
			if p := n.Process(); p != nil {
				p.Kill()
			}
		}
		if rerr := c.replan(); rerr != nil {
			t.Fatal(rerr)
		}
		err = c.Start(StartTimeout)
	}
	for _, n := range down {
		if p := n.Process(); p != nil && p.running() {
			t.Cleanup(func() { p.check(t) })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitHealthy(HealthTimeout); err != nil {
		t.Fatal(err)
	}
}

// Launch starts the node as its Config says, as Launch does.
func (n *Node) Launch(t testing.TB) *Process {
	t.Helper()
	p, err := n.Start(StartTimeout)
	return ready(t, p, err)
}

// Spawn starts the node as its Config says, as Spawn does.
func (n *Node) Spawn(t testing.TB) (p *Process, exited bool) {
	t.Helper()
	p, err := n.Start(StartTimeout)
	return p, exitedOrReady(t, p, err)
}
