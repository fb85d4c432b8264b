package rlproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for rlserver: started with
// RLPROC_FAKE set (through Wrap: env RLPROC_FAKE=mode), it behaves as fake
// says instead of running the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("RLPROC_FAKE"); mode != "" {
		os.Exit(fake(mode))
	}
	os.Exit(m.Run())
}

// fakeReady is the ready line the fake writes, as rlserver's text log does.
const fakeReady = `time=2025-01-01T00:00:00Z level=INFO msg="rlserver ready" mode=fake addr=127.0.0.1:7000`

// fake is what the stand-in does in each mode, as far as the harness can
// tell rlserver apart: its output, how it takes SIGTERM, its exit status.
func fake(mode string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	switch mode {
	case "serve": // ready, then a clean stop on SIGTERM
		fmt.Fprintln(os.Stderr, "level=INFO msg=starting")
		fmt.Fprintln(os.Stderr, fakeReady)
		<-term
		fmt.Fprintln(os.Stderr, "level=INFO msg=stopped")
		return 0
	case "json": // ready in the JSON log format
		fmt.Fprintln(os.Stderr, `{"level":"INFO","msg":"rlserver ready","addr":"127.0.0.1:7001"}`)
		<-term
		return 0
	case "fail-on-term": // ready, then exit 3 on SIGTERM
		fmt.Fprintln(os.Stderr, fakeReady)
		<-term
		return 3
	case "ignore-term": // ready, and SIGTERM changes nothing
		fmt.Fprintln(os.Stderr, fakeReady)
		select {}
	case "port-taken": // what rlserver says when its port is taken
		fmt.Fprintln(os.Stderr, "rlserver: listen tcp 127.0.0.1:7000: bind: address already in use")
		return 1
	case "bad-flag":
		fmt.Fprintln(os.Stderr, "rlserver: --shards 0: must be from 1 to 1024")
		return 2
	case "silent": // never ready
		<-term
		return 0
	case "version":
		fmt.Println("rlserver test")
		return 0
	}
	fmt.Fprintln(os.Stderr, "fake: unknown mode", mode)
	return 125
}

// fakeConfig runs the test binary as a fake rlserver in mode.
func fakeConfig(mode string) Config {
	return Config{Bin: os.Args[0], Wrap: []string{"env", "RLPROC_FAKE=" + mode}}
}

// Start returns once the ready line names the address, or says why not:
// an exit before it (with the exit code kept, and a taken port told
// apart), or no ready line in time (the process is then killed).
func TestStart(t *testing.T) {
	jsonReady := regexp.MustCompile(`"msg":"rlserver ready".*"addr":"([^"]+)"`)
	cases := []struct {
		mode     string
		ready    *regexp.Regexp
		timeout  time.Duration
		addr     string  // want, when ready
		errs     []error // the error wraps each
		exitCode int     // when it exited
	}{
		{mode: "serve", addr: "127.0.0.1:7000"},
		{mode: "json", ready: jsonReady, addr: "127.0.0.1:7001"},
		{mode: "port-taken", errs: []error{errExited, ErrAddrInUse}, exitCode: 1},
		{mode: "bad-flag", errs: []error{errExited}, exitCode: 2},
		{mode: "silent", timeout: 200 * time.Millisecond, errs: []error{errNotReady}, exitCode: -1},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(tc.mode)
			cfg.Ready = tc.ready
			timeout := tc.timeout
			if timeout == 0 {
				timeout = StartTimeout
			}
			p, err := Start(cfg, timeout)
			if p == nil {
				t.Fatalf("Start: no process: %v", err)
			}
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if p.Addr != tc.addr || p.Port() != tc.addr[len("127.0.0.1:"):] || !p.running() {
					t.Errorf("Addr %q, Port %q, running %v; want %q and running", p.Addr, p.Port(), p.running(), tc.addr)
				}
				if code, err := p.Terminate(StopTimeout); code != 0 || err != nil {
					t.Errorf("Terminate: %d, %v; want 0", code, err)
				}
				return
			}
			for _, want := range tc.errs {
				if !errors.Is(err, want) {
					t.Errorf("Start: %v, want it to wrap %v", err, want)
				}
			}
			if p.running() || p.ExitCode() != tc.exitCode || !p.exitExpected() {
				t.Errorf("running %v, exit code %d, exit expected %v; want exited %d, expected", p.running(), p.ExitCode(), p.exitExpected(), tc.exitCode)
			}
		})
	}
}

// Terminate reports the exit code, and kills a process that outlives
// SIGTERM; Kill ends one at once. Both mark the exit as expected.
func TestStopping(t *testing.T) {
	cases := []struct {
		mode   string
		stop   func(p *Process) (int, error)
		code   int
		err    error
		logHas string
	}{
		{"serve", func(p *Process) (int, error) { return p.Terminate(StopTimeout) }, 0, nil, "msg=stopped"},
		{"fail-on-term", func(p *Process) (int, error) { return p.Terminate(StopTimeout) }, 3, nil, "rlserver ready"},
		// Go's runtime answers the SIGQUIT that follows with every
		// goroutine's stack and exit code 2.
		{"ignore-term", func(p *Process) (int, error) { return p.Terminate(200 * time.Millisecond) }, 2, errStillRunning, "goroutine "},
		{"serve", func(p *Process) (int, error) { p.Kill(); return p.ExitCode(), nil }, -1, nil, "rlserver ready"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			p, err := Start(fakeConfig(tc.mode), StartTimeout)
			if err != nil {
				t.Fatal(err)
			}
			code, err := tc.stop(p)
			if code != tc.code || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("stopped: %d, %v; want %d, %v", code, err, tc.code, tc.err)
			}
			if p.running() || !p.exitExpected() || !strings.Contains(p.Log(), tc.logHas) {
				t.Errorf("running %v, exit expected %v, log %q (want %q in it)", p.running(), p.exitExpected(), p.Log(), tc.logHas)
			}
		})
	}
}

// Output receives everything the process writes, as its log does.
func TestOutputCopy(t *testing.T) {
	var out bytes.Buffer
	cfg := fakeConfig("serve")
	cfg.Output = &out
	p, err := Start(cfg, StartTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Terminate(StopTimeout); err != nil {
		t.Fatal(err)
	}
	if out.String() != p.Log() || !strings.Contains(out.String(), "msg=stopped") {
		t.Errorf("copy %q, log %q; want the same, to the end", out.String(), p.Log())
	}
}

// Run returns what the process wrote and its exit status.
func TestRun(t *testing.T) {
	cases := []struct {
		mode           string
		stdout, stderr string
		code           int
	}{
		{"version", "rlserver test\n", "", 0},
		{"bad-flag", "", "rlserver: --shards 0: must be from 1 to 1024\n", 2},
	}
	for _, tc := range cases {
		stdout, stderr, code, err := Run(fakeConfig(tc.mode), StartTimeout)
		if err != nil || stdout != tc.stdout || stderr != tc.stderr || code != tc.code {
			t.Errorf("%s: %q, %q, %d, %v; want %q, %q, %d", tc.mode, stdout, stderr, code, err, tc.stdout, tc.stderr, tc.code)
		}
	}
	if _, _, _, err := Run(fakeConfig("silent"), 200*time.Millisecond); err == nil {
		t.Error("Run of a process that does not exit: no error")
	}
}

// errorRecorder is a testing.TB that records what check reports.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Helper() {}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// The tests' check at the end: a clean stop passes; a process that died
// on its own, or exits non-zero on SIGTERM, fails the test.
func TestCheck(t *testing.T) {
	cases := []struct {
		mode   string
		before func(p *Process) // what happens while the test runs
		want   string           // in the one error reported; "" for none
	}{
		{"serve", func(*Process) {}, ""},
		{"serve", func(p *Process) { p.Kill() }, ""},
		{"serve", func(p *Process) { p.Signal(syscall.SIGKILL); <-p.Exited() }, "died during the test"},
		{"fail-on-term", func(*Process) {}, "exited 3 after SIGTERM"},
	}
	for _, tc := range cases {
		p, err := Start(fakeConfig(tc.mode), StartTimeout)
		if err != nil {
			t.Fatal(err)
		}
		tc.before(p)
		rec := &errorRecorder{TB: t}
		p.check(rec)
		switch {
		case tc.want == "" && len(rec.errors) > 0:
			t.Errorf("%s: check reported %q, want nothing", tc.mode, rec.errors)
		case tc.want != "" && (len(rec.errors) != 1 || !strings.Contains(rec.errors[0], tc.want)):
			t.Errorf("%s: check reported %q, want one error saying %q", tc.mode, rec.errors, tc.want)
		}
		if p.running() {
			t.Errorf("%s: still running after check", tc.mode)
		}
	}
}

// The ready line is found however the output is cut into writes, and only
// the first one counts.
func TestLogBufferFindsTheReadyLine(t *testing.T) {
	log := "starting\n" + fakeReady + "\n" + strings.Replace(fakeReady, "7000", "7002", 1) + "\n"
	for _, size := range []int{1, 7, len(log)} {
		l := newLogBuffer(readyLine, nil)
		for i := 0; i < len(log); i += size {
			l.Write([]byte(log[i:min(i+size, len(log))]))
		}
		select {
		case addr := <-l.ready:
			if addr != "127.0.0.1:7000" {
				t.Errorf("writes of %d bytes: address %q, want the first line's", size, addr)
			}
		default:
			t.Errorf("writes of %d bytes: no ready line found", size)
		}
		if l.String() != log {
			t.Errorf("writes of %d bytes: log %q, want %q", size, l.String(), log)
		}
	}
}

// freePorts hands out distinct ports, never the same one twice, each free
// to bind, and outside the kernel's ephemeral range where it can read it:
// there no outgoing connection takes a planned port before its node binds it.
func TestFreePortsAreDistinct(t *testing.T) {
	lo, hi := plannedRange()
	if hi <= lo {
		t.Log("no planned range here: the kernel's ephemeral ports are used")
	}
	seen := map[int]bool{}
	for range 20 {
		ports, err := freePorts(5)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 5 {
			t.Fatalf("asked for 5 ports, got %v", ports)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d returned twice", p)
			}
			seen[p] = true
			if hi > lo && (p < lo || p >= hi) {
				t.Errorf("port %d outside the planned range [%d, %d)", p, lo, hi)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Fatalf("port %d: %v", p, err)
			}
			ln.Close()
		}
	}
}

// LaunchOnPorts starts again on other ports when a port it chose was taken
// before the server bound it, and gives the ports of the start that worked.
func TestLaunchOnPortsTriesOtherPorts(t *testing.T) {
	var tried [][]int
	p, ports := LaunchOnPorts(t, 2, func(ports []int) Config {
		tried = append(tried, ports)
		if len(tried) == 1 {
			return fakeConfig("port-taken")
		}
		return fakeConfig("serve")
	})
	if p.Addr != "127.0.0.1:7000" {
		t.Fatalf("ready at %q", p.Addr)
	}
	if len(tried) != 2 || !slices.Equal(ports, tried[1]) || slices.ContainsFunc(tried[1], func(port int) bool { return slices.Contains(tried[0], port) }) {
		t.Fatalf("tried %v, returned %v: want a second start on two other ports, and those", tried, ports)
	}
}
