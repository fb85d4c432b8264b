package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// toolTimeout bounds every redis-cli and redis-benchmark run.
const toolTimeout = 60 * time.Second

// toolVersion is what `tool --version` prints after the tool's name.
func toolVersion(tool string) string {
	out, err := exec.Command(tool, "--version").Output()
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return "?"
	}
	return strings.TrimPrefix(f[1], "v=")
}

// toolCases collects the results of one tool's cases.
type toolCases struct {
	tool, version, mode string
	results             []result
}

func newToolCases(tool, mode string) *toolCases {
	return &toolCases{tool: tool, version: toolVersion(tool), mode: mode}
}

// run runs one case and records its result.
func (tc *toolCases) run(name string, f func() (string, error)) {
	detail, err := f()
	status := statusPass
	if err != nil {
		status, detail = statusFail, err.Error()
	}
	detail = strings.Join(strings.Fields(detail), " ")
	logf("  %-9s %-8s %-10s %-8s %-18s %s", status, tc.tool, tc.version, tc.mode, name, detail)
	tc.results = append(tc.results, result{client: tc.tool, version: tc.version, mode: tc.mode, name: name, status: status, detail: detail})
}

// runTool runs a tool with args and stdin, bounded by toolTimeout, and
// returns its stdout; a non-zero exit or a timeout is an error carrying the
// output.
func runTool(stdin string, tool string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("%s %v hung (killed after %v); output %q", tool, args, toolTimeout, stdout.String())
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %v: %v; output %q %q", tool, args, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// expectOutput runs a tool and matches its whole stdout against want.
func expectOutput(want *regexp.Regexp, stdin, tool string, args ...string) error {
	out, err := runTool(stdin, tool, args...)
	if err != nil {
		return err
	}
	if !want.MatchString(out) {
		return fmt.Errorf("%s %v printed %q, want it to match %q", tool, args, out, want)
	}
	return nil
}

// rawDecision matches redis-cli's raw output (stdout not a terminal) of a
// fresh RL.SLIDING key limit 10: allowed, 10, the given remaining, 0, reset.
func rawDecision(remaining int) string {
	return fmt.Sprintf(`1\n10\n%d\n0\n\d+\n`, remaining)
}

func toolsSingle(open, secured *server, filter *regexp.Regexp) []result {
	var results []result
	_, port := splitAddr(open.Addr)
	_, authPort := splitAddr(secured.Addr)
	host := []string{"-h", "127.0.0.1", "-p", port}
	win := "3600000"
	if filter.MatchString("redis-cli") {
		cli := newToolCases("redis-cli", "single")
		cli.run("one-shot", func() (string, error) {
			if err := expectOutput(regexp.MustCompile(`^PONG\n$`), "", "redis-cli", append(host, "PING")...); err != nil {
				return "", err
			}
			if err := expectOutput(regexp.MustCompile("^"+rawDecision(9)+"$"), "", "redis-cli", append(host, "RL.SLIDING", "cli:one", "10", win)...); err != nil {
				return "", err
			}
			return "PING, RL.SLIDING, CL.THROTTLE", expectOutput(regexp.MustCompile(`^0\n16\n15\n-1\n2\n$`), "", "redis-cli",
				append(host, "CL.THROTTLE", "cli:cell", "15", "30", "60")...)
		})
		cli.run("one-shot-auth", func() (string, error) {
			args := []string{"-h", "127.0.0.1", "-p", authPort, "-a", password, "--no-auth-warning", "-n", "0", "RL.SLIDING", "cli:auth", "10", win}
			return "-a PASSWORD -n 0", expectOutput(regexp.MustCompile("^"+rawDecision(9)+"$"), "", "redis-cli", args...)
		})
		cli.run("one-shot-resp3", func() (string, error) {
			want := regexp.MustCompile(`^allowed 1\nlimit 10\nremaining 9\nretry_after_ms 0\nreset_after_ms \d+\n$`)
			return "-3: a map", expectOutput(want, "", "redis-cli", append(host, "-3", "RL.SLIDING", "cli:resp3", "10", win)...)
		})
		cli.run("stdin", func() (string, error) {
			in := "PING\nRL.SLIDING cli:stdin 10 " + win + "\nRL.SLIDING cli:stdin 10 " + win + "\n"
			want := regexp.MustCompile("^PONG\n" + rawDecision(9) + rawDecision(8) + "$")
			return "commands on stdin", expectOutput(want, in, "redis-cli", host...)
		})
		cli.run("pipe-100", func() (string, error) {
			var in strings.Builder
			for range 100 {
				fmt.Fprintf(&in, "*4\r\n$10\r\nRL.SLIDING\r\n$8\r\ncli:pipe\r\n$2\r\n50\r\n$7\r\n%s\r\n", win)
			}
			want := regexp.MustCompile(`errors: 0, replies: 100`)
			return "--pipe, 100 decisions", expectOutput(want, in.String(), "redis-cli", append(host, "--pipe")...)
		})
		cli.run("interactive", func() (string, error) {
			return interactive(port, []step{
				{"PING", `PONG`},
				{"RL.SLIDING cli:tty 10 " + win, `1\) \(integer\) 1\r\n2\) \(integer\) 10\r\n3\) \(integer\) 9\r\n4\) \(integer\) 0\r\n5\) \(integer\) \d+`},
				{"CL.THROTTLE cli:ttycell 15 30 60", `1\) \(integer\) 0\r\n2\) \(integer\) 16\r\n3\) \(integer\) 15\r\n4\) \(integer\) -1\r\n5\) \(integer\) 2`},
				{"HELLO 3", `proto`},
				{"RL.SLIDING cli:tty 10 " + win, `1# "allowed" => \(integer\) 1\r\n2# "limit" => \(integer\) 10\r\n3# "remaining" => \(integer\) 8`},
			})
		})
		results = append(results, cli.results...)
	}
	if filter.MatchString("redis-benchmark") {
		b := newToolCases("redis-benchmark", "single")
		b.run("ping", func() (string, error) {
			return benchmark(regexp.MustCompile(`PING_MBULK: [\d.]+ requests per second`), append(host, "-n", "2000", "-c", "10", "-t", "ping")...)
		})
		b.run("rl.sliding", func() (string, error) {
			return benchmark(rpsLine, append(host, "-n", "5000", "-c", "10", "-P", "16", "-r", "1000", "RL.SLIDING", "bench:__rand_int__", "100", "60000")...)
		})
		b.run("auth-resp3", func() (string, error) {
			args := []string{"-h", "127.0.0.1", "-p", authPort, "-a", password, "-3", "-n", "2000", "-c", "10", "-r", "1000", "RL.SLIDING", "bench:__rand_int__", "100", "60000"}
			return benchmark(rpsLine, args...)
		})
		results = append(results, b.results...)
	}
	return results
}

// rpsLine is redis-benchmark -q's summary of a custom command.
var rpsLine = regexp.MustCompile(`^RL\.SLIDING .*: [\d.]+ requests per second`)

// benchmark runs redis-benchmark -q, which exits non-zero on any error
// reply, and returns its summary line.
func benchmark(want *regexp.Regexp, args ...string) (string, error) {
	args = append([]string{"-q"}, args...)
	out, err := runTool("", "redis-benchmark", args...)
	if err != nil {
		return "", err
	}
	// -q rewrites its progress line with \r; the summary is after the last.
	lines := strings.Split(strings.ReplaceAll(out, "\r", "\n"), "\n")
	var got []string
	for _, l := range lines {
		if want.MatchString(l) {
			got = append(got, strings.TrimSpace(l))
		}
	}
	if len(got) == 0 {
		return "", fmt.Errorf("redis-benchmark %v printed %q, want a line matching %q", args, out, want)
	}
	return strings.Join(got, "; "), nil
}

func toolsCluster(ctx context.Context, cl, auth *cluster, filter *regexp.Regexp) []result {
	var results []result
	keys, err := cl.shardKeys(ctx, "cli:")
	if err != nil {
		return []result{{client: "redis-cli", mode: "cluster", name: "(keys)", status: statusFail, detail: err.Error()}}
	}
	ranges, err := cl.slotRanges(ctx)
	if err != nil {
		return []result{{client: "redis-cli", mode: "cluster", name: "(keys)", status: statusFail, detail: err.Error()}}
	}
	_, port := splitAddr(cl.Nodes[0].Addr)
	_, authPort := splitAddr(auth.Nodes[0].Addr)
	// A key whose shard another node than the first leads, for -c to follow
	// a MOVED.
	moved := ""
	for i, r := range ranges {
		if r.leader != cl.Nodes[0].Addr {
			moved = keys[i]
			break
		}
	}
	win := "3600000"
	if filter.MatchString("redis-cli") {
		cli := newToolCases("redis-cli", "cluster")
		cli.run("-c one-shot", func() (string, error) {
			for _, k := range keys {
				err := expectOutput(regexp.MustCompile("^"+rawDecision(9)+"$"), "", "redis-cli", "-c", "-h", "127.0.0.1", "-p", port, "RL.SLIDING", k, "10", win)
				if err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("one node, a key on each of %d shards", len(keys)), nil
		})
		cli.run("-c moved", func() (string, error) {
			if moved == "" {
				return "", errors.New("the first node leads every shard")
			}
			in := "READONLY\nRL.SLIDING " + moved + " 10 " + win + "\nRL.SLIDING " + moved + " 10 " + win + "\n"
			want := regexp.MustCompile(`^OK\n-> Redirected to slot \[\d+\] located at 127\.0\.0\.1:\d+\n` + rawDecision(8) + rawDecision(7) + "$")
			return "READONLY, then a key another node leads", expectOutput(want, in, "redis-cli", "-c", "-h", "127.0.0.1", "-p", port)
		})
		cli.run("-c interactive", func() (string, error) {
			if moved == "" {
				return "", errors.New("the first node leads every shard")
			}
			return interactive(port, []step{
				{"READONLY", `OK`},
				{"RL.SLIDING " + moved + " 10 " + win, `-> Redirected to slot \[\d+\] located at 127\.0\.0\.1:\d+\r\n1\) \(integer\) 1\r\n2\) \(integer\) 10\r\n3\) \(integer\) 6`},
			}, "-c")
		})
		cli.run("-c auth", func() (string, error) {
			for _, k := range keys {
				err := expectOutput(regexp.MustCompile("^"+rawDecision(9)+"$"), "", "redis-cli", "-c", "-h", "127.0.0.1", "-p", authPort,
					"-a", password, "--no-auth-warning", "RL.SLIDING", k, "10", win)
				if err != nil {
					return "", err
				}
			}
			return "-a PASSWORD, a key on each shard", nil
		})
		cli.run("--cluster check", func() (string, error) {
			out, err := runTool("", "redis-cli", "--cluster", "check", cl.Nodes[0].Addr)
			if err != nil {
				return "", err
			}
			for _, want := range []string{"in 3 masters", "[OK] All nodes agree about slots configuration", "[OK] All 16384 slots covered"} {
				if !strings.Contains(out, want) {
					return "", fmt.Errorf("redis-cli --cluster check printed %q, want %q in it", out, want)
				}
			}
			return "3 masters, all nodes agree, all 16384 slots covered", nil
		})
		results = append(results, cli.results...)
	}
	if filter.MatchString("redis-benchmark") {
		b := newToolCases("redis-benchmark", "cluster")
		b.run("--cluster", func() (string, error) {
			return benchmark(rpsLine, "--cluster", "-h", "127.0.0.1", "-p", port, "-n", "5000", "-c", "6", "-P", "16", "-r", "1000",
				"RL.SLIDING", "bench:{tag}:__rand_int__", "100", "60000")
		})
		b.run("--cluster auth", func() (string, error) {
			return benchmark(rpsLine, "--cluster", "-h", "127.0.0.1", "-p", authPort, "-a", password, "-n", "2000", "-c", "6", "-r", "1000",
				"RL.SLIDING", "bench:{tag}:__rand_int__", "100", "60000")
		})
		results = append(results, b.results...)
	}
	return results
}

func splitAddr(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}

// step is one line typed at redis-cli's prompt and a pattern its answer
// must match.
type step struct {
	line string
	want string
}

// interactive runs redis-cli on a terminal (a pseudo-terminal from
// script(1), sized so that redis-cli need not ask the terminal for its
// width), types each step's line once the prompt is back, and waits for the
// answer; then it quits.
func interactive(port string, steps []step, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cli := "redis-cli -h 127.0.0.1 -p " + port + " " + strings.Join(extra, " ")
	cmd := exec.CommandContext(ctx, "script", "-qfec", "stty cols 200 rows 50; exec "+cli, "/dev/null")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	out := &watched{changed: make(chan struct{}, 1)}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() {
		cmd.Cancel()
		cmd.Wait()
	}()
	prompt := regexp.MustCompile(`127\.0\.0\.1:\d+> `)
	// The first prompt: redis-cli is connected and has asked COMMAND DOCS.
	if err := out.wait(ctx, 0, prompt); err != nil {
		return "", err
	}
	for _, s := range steps {
		from := out.len()
		io.WriteString(stdin, s.line+"\r")
		want := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(s.line) + `.*?\r\n.*` + s.want + `.*` + prompt.String())
		if err := out.wait(ctx, from, want); err != nil {
			return "", fmt.Errorf("after %q: %w", s.line, err)
		}
	}
	io.WriteString(stdin, "quit\r")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		return "", fmt.Errorf("redis-cli did not quit; screen %q", out.tail())
	}
	return fmt.Sprintf("on a terminal: %d commands", len(steps)), nil
}

// watched collects a process's output and signals each write.
type watched struct {
	mu      sync.Mutex
	buf     []byte
	changed chan struct{}
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *watched) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf)
}

func (w *watched) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}

// wait waits until the output from offset from matches re.
func (w *watched) wait(ctx context.Context, from int, re *regexp.Regexp) error {
	for {
		w.mu.Lock()
		ok := re.Match(w.buf[from:])
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-w.changed:
		case <-ctx.Done():
			return fmt.Errorf("no output matching %q; screen %q", re, w.tail())
		}
	}
}
