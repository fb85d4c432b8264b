// Package rltest starts real rlserver processes for the tests of the client
// package and its examples: the binary built once from ./cmd/rlserver (or
// the one RLSERVER_BIN names), on free loopback ports, stopped when the test
// ends.
package rltest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds on waiting for a process; generous because -race and parallel
// packages slow everything down.
const (
	startTimeout   = 20 * time.Second
	stopTimeout    = 15 * time.Second
	clusterTimeout = 30 * time.Second
)

var (
	buildDir  string // made by Main, removed after the tests
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Main runs a package's tests and removes the binary built for them. Call
// it from TestMain: os.Exit(rltest.Main(m)). The binary is built on the
// first Start only, so unit tests alone never pay for it.
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rltest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rltest:", err)
		return 1
	}
	buildDir = dir
	defer os.RemoveAll(dir)
	return m.Run()
}

// binary returns the rlserver binary, building it the first time.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("RLSERVER_BIN"); p != "" {
			binPath = p
			return
		}
		if buildDir == "" {
			buildErr = errors.New("rltest.Main was not called from TestMain")
			return
		}
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(buildDir, "rlserver")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/rlserver")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/rlserver: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// moduleRoot is the directory of the go.mod the tests run in.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(mod), nil
}

// readyLine is the log line rlserver writes once it accepts clients.
var readyLine = regexp.MustCompile(`msg="rlserver ready".* addr=(\S+)`)

// Server is one running rlserver process.
type Server struct {
	// Addr is the host:port it serves clients on.
	Addr string

	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{} // closed when the process has exited
}

// Start runs rlserver --in-memory --enable-debug-command on a free loopback
// port, plus args, and waits until it is ready. It is stopped when the test
// ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	all := append([]string{"--in-memory", "--enable-debug-command", "--bind", "127.0.0.1", "--port", "0"}, args...)
	return launch(t, t.TempDir(), all)
}

// launch runs the binary with args in dir and waits for its ready line.
func launch(t testing.TB, dir string, args []string) *Server {
	t.Helper()
	s := &Server{log: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(binary(t), args...)
	s.cmd.Dir = dir
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start rlserver: %v", err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.log.writeLine(sc.Text())
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		_ = s.cmd.Wait() // after the pipe is drained, as exec requires
		close(s.done)
	}()
	t.Cleanup(func() { s.Stop(t) })
	select {
	case s.Addr = <-ready:
	case <-s.done:
		t.Fatalf("rlserver exited before it was ready; log:\n%s", s.log)
	case <-time.After(startTimeout):
		t.Fatalf("rlserver not ready after %v; log:\n%s", startTimeout, s.log)
	}
	return s
}

// Stop sends SIGTERM and waits for the process to exit (killing it if it
// takes too long). Stopping twice is harmless.
func (s *Server) Stop(t testing.TB) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Errorf("rlserver still running %v after SIGTERM; log:\n%s", stopTimeout, s.log)
	}
}

// Client is a go-redis client of s speaking protocol (2 or 3), closed when
// the test ends. Retries are off, so every decision is sent exactly once.
func (s *Server) Client(t testing.TB, protocol int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: protocol, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// StartCluster runs a three-node rlserver cluster of shards shards on
// loopback with short Raft timeouts, and waits until every node reports
// cluster_state:ok. It returns the nodes' client addresses.
func StartCluster(t testing.TB, shards int) []string {
	t.Helper()
	ports := FreePorts(t, 6)
	var members []string
	for i := range 3 {
		members = append(members, fmt.Sprintf("n%d@127.0.0.1:%d@%d", i+1, ports[i], ports[3+i]))
	}
	var addrs []string
	for i := range 3 {
		dir := t.TempDir()
		s := launch(t, dir, []string{
			"--node-id", fmt.Sprintf("n%d", i+1), "--bind", "127.0.0.1", "--port", strconv.Itoa(ports[i]),
			"--data-dir", filepath.Join(dir, "data"), "--cluster", strings.Join(members, ","),
			"--shards", strconv.Itoa(shards), "--raft-heartbeat", "100ms",
		})
		addrs = append(addrs, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	for _, addr := range addrs {
		waitClusterOK(ctx, t, addr)
	}
	return addrs
}

// waitClusterOK polls CLUSTER INFO on addr until every shard has a leader.
// Polling is the only way to observe another process's elections.
func waitClusterOK(ctx context.Context, t testing.TB, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster node %s not ok after %v: %v %q", addr, clusterTimeout, err, info)
		case <-tick.C:
		}
	}
}

// FreePorts returns n loopback ports that were free when asked.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// ClosedAddr is a loopback address nothing listens on: connecting to it is
// refused at once, as to a dead rlserver.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePorts(t, 1)[0])
}

// lockedBuffer collects a process's log for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) writeLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 {
		b.buf.WriteString(s)
		b.buf.WriteByte('\n')
	}
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
