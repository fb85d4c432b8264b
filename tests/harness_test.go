package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// binPath is the rlserver binary TestMain builds for the whole suite.
var binPath string

// Bounds on how long the harness waits for the process; generous, because
// the machine may be busy with other parallel tests and -race.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 15 * time.Second
)

// TestMain builds ./cmd/rlserver once, so every test runs the real binary
// exactly as users do.
func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rlserver-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "rlserver")
	build := exec.Command("go", "build", "-o", binPath, "./cmd/rlserver")
	build.Dir = ".." // the module root: the tests run in its tests/ directory
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "tests: go build ./cmd/rlserver: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// server is one running rlserver process.
type server struct {
	Addr   string // host:port it serves on
	Port   string
	cmd    *exec.Cmd
	stderr *logBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, set before done is closed

	mu       sync.Mutex
	stopping bool // the test asked it to stop: exiting is expected
}

// baseArgs are the flags every test server runs with: the debug clock and a
// free loopback port.
var baseArgs = []string{"--enable-debug-command", "--port", "0", "--bind", "127.0.0.1"}

// durableSuite, set by RLSERVER_E2E_DURABLE=1, runs every test's server in
// the durable mode (each shard a Raft group on disk) instead of --in-memory,
// to drive the replicated path with the whole suite.
var durableSuite = os.Getenv("RLSERVER_E2E_DURABLE") == "1"

// readyLine matches the log line rlserver writes once it accepts clients.
var readyLine = regexp.MustCompile(`msg="rlserver ready".* addr=(\S+)`)

// startServer runs rlserver --in-memory with baseArgs plus args, in a fresh
// working directory, and waits for its ready line. On cleanup it sends
// SIGTERM and fails the test unless the process exits 0 in time (or if it
// had died on its own).
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	if durableSuite {
		return startDurableServer(t, args...)
	}
	return launch(t, t.TempDir(), join([]string{"--in-memory"}, baseArgs, args)...)
}

// startDurableServer is startServer without --in-memory: the shards keep
// their state in rlserver-data in the fresh working directory.
func startDurableServer(t testing.TB, args ...string) *server {
	t.Helper()
	return launch(t, t.TempDir(), join(baseArgs, args)...)
}

// join concatenates argument lists into a new slice.
func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// launch runs rlserver with exactly args in the working directory dir, as
// startServer does.
func launch(t testing.TB, dir string, args ...string) *server {
	t.Helper()
	return launchWrapped(t, dir, nil, args...)
}

// launchWrapped is launch with the binary run through the command prefix
// wrap (such as unshare ... sh -c '... exec "$@"' sh), which must end by
// exec'ing it, so the process the test signals is rlserver itself.
func launchWrapped(t testing.TB, dir string, wrap []string, args ...string) *server {
	t.Helper()
	s, exited := spawn(t, dir, wrap, args...)
	if exited {
		t.Fatalf("rlserver exited before it was ready (%v); stderr:\n%s", s.err, s.stderr)
	}
	return s
}

// spawn is launchWrapped for a start that may fail: it returns once the
// server is ready, or once it has exited (exited true, its stderr kept).
func spawn(t testing.TB, dir string, wrap []string, args ...string) (s *server, exited bool) {
	t.Helper()
	s = &server{stderr: newLogBuffer(readyLine), done: make(chan struct{})}
	argv := join(wrap, []string{binPath}, args)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	// A working directory of its own: a start without --in-memory writes its
	// data directory there, never into the repository.
	s.cmd.Dir = dir
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start rlserver: %v", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stopAndCheck(t) })

	select {
	case m := <-s.stderr.matched:
		s.Addr = m[1]
		s.Port = s.Addr[strings.LastIndexByte(s.Addr, ':')+1:]
	case <-s.done:
		s.expectExit() // reported by the caller; the cleanup need not repeat it
		return s, true
	case <-time.After(startTimeout):
		t.Fatalf("rlserver not ready after %v; stderr:\n%s", startTimeout, s.stderr)
	}
	return s, false
}

// expectExit tells the cleanup that the process is meant to exit, so it does
// not report the exit as a crash.
func (s *server) expectExit() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
}

// Stop sends SIGTERM and returns the exit code once the process has exited.
func (s *server) Stop(t testing.TB) int {
	t.Helper()
	s.expectExit()
	select {
	case <-s.done:
		return exitCode(s.err)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.done
		t.Errorf("rlserver still running %v after SIGTERM; stderr:\n%s", stopTimeout, s.stderr)
	}
	return exitCode(s.err)
}

// stopAndCheck is the cleanup: a process that died while the test ran, or
// that does not exit 0 on SIGTERM, fails the test with its stderr.
func (s *server) stopAndCheck(t testing.TB) {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	select {
	case <-s.done:
		if !stopping {
			t.Errorf("rlserver died during the test (%v); stderr:\n%s", s.err, s.stderr)
		}
		return
	default:
	}
	if code := s.Stop(t); code != 0 {
		t.Errorf("rlserver exited %d after SIGTERM; stderr:\n%s", code, s.stderr)
	}
}

// Client returns a go-redis client of s speaking RESP protocol (2 or 3),
// closed on cleanup. Retries are off so each command is sent exactly once:
// a retried decision would spend budget twice.
func (s *server) Client(t testing.TB, protocol int, tweak ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: s.Addr, Protocol: protocol, MaxRetries: -1}
	for _, f := range tweak {
		f(opt)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// exitCode is the status of an exited process, -1 if it did not exit
// normally.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// runBinary runs rlserver with exactly args (no baseArgs), in a fresh
// working directory, and expects it to exit on its own; it returns stdout,
// stderr and the exit code.
func runBinary(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runBinaryIn(t, t.TempDir(), args...)
}

// runBinaryIn is runBinary in the working directory dir.
func runBinaryIn(t testing.TB, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("rlserver %v did not exit within %v; stderr:\n%s", args, startTimeout, errb.String())
	}
	return out.String(), errb.String(), exitCode(err)
}

// logBuffer collects a process's output and reports the first line that
// matches a pattern.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	scanned int // bytes of buf already searched for whole lines
	re      *regexp.Regexp
	matched chan []string // receives the submatches of the first matching line
}

func newLogBuffer(re *regexp.Regexp) *logBuffer {
	return &logBuffer{re: re, matched: make(chan []string, 1)}
}

// Write appends p and looks for the pattern in the complete lines.
func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		rest := l.buf.Bytes()[l.scanned:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.scanned += i + 1
		if l.re != nil {
			if m := l.re.FindStringSubmatch(string(rest[:i])); m != nil {
				l.matched <- m
				l.re = nil
			}
		}
	}
}

// String is everything written so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor polls cond until it holds, failing the test after timeout. It is
// how the tests wait for the server without sleeping a guessed time.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
