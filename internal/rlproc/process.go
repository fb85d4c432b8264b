// Package rlproc runs real rlserver processes for the end-to-end tests
// (tests/), the client package's integration tests and the client
// compatibility suite's driver (tests/compat/driver): it builds the binary,
// starts it on loopback, waits for its ready line, signals, stops or kills
// it, keeps its log, and starts clusters of nodes and waits until every
// shard has a leader.
//
// Its core returns errors and needs no testing.TB, for the driver, a plain
// program; testing.go adds the thin helpers the tests use (a failed start
// fails the test, a process is stopped and checked when the test ends).
package rlproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds on waiting for a process; generous, because the machine may be
// busy with parallel tests and -race.
const (
	// StartTimeout bounds the wait for a process's ready line.
	StartTimeout = 20 * time.Second
	// StopTimeout bounds the wait for a process to exit after SIGTERM.
	StopTimeout = 15 * time.Second
)

// readyLine matches the line rlserver logs (in its default text format)
// once it accepts clients; its first submatch is the address it serves on.
var readyLine = regexp.MustCompile(`msg="rlserver ready".* addr=(\S+)`)

var (
	// errExited is wrapped by Start's error when the process exited before
	// it was ready.
	errExited = errors.New("rlserver exited before it was ready")
	// ErrAddrInUse is wrapped, beside errExited, when it exited because an
	// address it was to listen on was taken: a port found free can be
	// taken by another process before rlserver binds it.
	ErrAddrInUse = errors.New("address already in use")
	// errNotReady is wrapped by Start's error when no ready line came in
	// time; the process has been killed.
	errNotReady = errors.New("rlserver not ready in time")
	// errStillRunning is wrapped by Terminate's error when the process
	// outlived SIGTERM by the timeout; it has been killed.
	errStillRunning = errors.New("rlserver still running after SIGTERM")
)

// Config says how to run rlserver.
type Config struct {
	// Bin is the rlserver binary.
	Bin string
	// Args is its command line, the binary left out.
	Args []string
	// Dir is its working directory: a start without --in-memory keeps its
	// data there by default, never in the repository.
	Dir string
	// Wrap is a command prefix to run the binary through, such as
	// unshare ... sh -c '... exec "$@"' sh. It must end by exec'ing its
	// arguments, so that the process signalled is rlserver itself.
	Wrap []string
	// Ready matches the log line that says the process serves, its first
	// submatch the address; nil means the ready line of rlserver's
	// default text log.
	Ready *regexp.Regexp
	// Output, if set, receives a copy of everything the process writes, as
	// a log file does.
	Output io.Writer
}

// command is the command cfg describes, Wrap first, in Dir.
func (cfg Config) command(ctx context.Context) *exec.Cmd {
	argv := append(slices.Clone(cfg.Wrap), cfg.Bin)
	argv = append(argv, cfg.Args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	return cmd
}

// Process is one run of rlserver.
type Process struct {
	// Addr is the host:port it serves clients on, from its ready line.
	Addr string

	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's result, set before done is closed

	mu       sync.Mutex
	stopping bool // its exit is expected (see ExpectExit)
}

// Start runs rlserver as cfg says and returns once it is ready. If it exits
// first, or is not ready within timeout (it is then killed), the error
// says so, with its log, and the Process is returned all the same, to be
// asked for its exit code and log; it is nil only when the process could
// not be started at all.
func Start(cfg Config, timeout time.Duration) (*Process, error) {
	if cfg.Bin == "" {
		return nil, errors.New("rlproc: no rlserver binary given")
	}
	ready := cfg.Ready
	if ready == nil {
		ready = readyLine
	}
	p := &Process{log: newLogBuffer(ready, cfg.Output), done: make(chan struct{})}
	p.cmd = cfg.command(context.Background())
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.cmd.Path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case p.Addr = <-p.log.ready:
		return p, nil
	case <-p.done:
		p.ExpectExit()
		if strings.Contains(p.Log(), "address already in use") {
			return p, fmt.Errorf("%w: %w (%v); log:\n%s", errExited, ErrAddrInUse, p.err, p.Log())
		}
		return p, fmt.Errorf("%w (%v); log:\n%s", errExited, p.err, p.Log())
	case <-timer.C:
		p.Kill()
		return p, fmt.Errorf("%w: no ready line after %v; log:\n%s", errNotReady, timeout, p.Log())
	}
}

// Port is the port of Addr.
func (p *Process) Port() string {
	return p.Addr[strings.LastIndexByte(p.Addr, ':')+1:]
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Log is everything the process has written so far.
func (p *Process) Log() string { return p.log.String() }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// running reports whether the process has not exited.
func (p *Process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ExitCode is the process's exit status once it has exited: -1 while it
// runs, or if a signal ended it.
func (p *Process) ExitCode() int {
	if p.running() {
		return -1
	}
	return exitCode(p.err)
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// ExpectExit records that the process is meant to exit, so that the
// tests' check at the end does not report its exit as a crash. Kill and
// Terminate record it themselves.
func (p *Process) ExpectExit() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
}

// exitExpected reports whether ExpectExit was called.
func (p *Process) exitExpected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// Kill stops the process as kill -9 does and waits for it to exit.
func (p *Process) Kill() {
	p.ExpectExit()
	// An error means it has exited already; the wait below sees that too.
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Terminate sends SIGTERM and returns the exit code once the process has
// exited. If it is still running after timeout it is killed, and the error
// says so. Terminating a process that has exited returns its exit code.
func (p *Process) Terminate(timeout time.Duration) (int, error) {
	p.ExpectExit()
	if !p.running() {
		return p.ExitCode(), nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.Kill()
		return p.ExitCode(), fmt.Errorf("SIGTERM: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.ExitCode(), nil
	case <-timer.C:
		// SIGQUIT makes a Go program print every goroutine's stack before
		// it exits: the log then says where the shutdown was stuck.
		p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
		}
		p.Kill()
		return p.ExitCode(), fmt.Errorf("%w %v later (its goroutines' stacks are at the end of its log)", errStillRunning, timeout)
	}
}

// Run runs rlserver as cfg says (Ready and Output aside) and expects it to
// exit on its own, as it does on --version or a bad flag, within timeout.
// It returns what it wrote on stdout and on stderr, and its exit status.
func Run(cfg Config, timeout time.Duration) (stdout, stderr string, code int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := cfg.command(ctx)
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), errb.String(), -1, fmt.Errorf("rlserver %v did not exit within %v", cfg.Args, timeout)
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return out.String(), errb.String(), -1, fmt.Errorf("run rlserver: %w", runErr)
	}
	return out.String(), errb.String(), exitCode(runErr), nil
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
