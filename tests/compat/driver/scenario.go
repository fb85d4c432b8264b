package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// scenarioProgram is one client library's scenario: a program that prints
// RESULT lines and may ask the driver to act with CONTROL lines.
type scenarioProgram struct {
	client string   // as it names itself in its RESULT lines
	argv   []string // the command that runs it
}

// target is what a scenario runs against.
type target struct {
	mode      string // "single" or "cluster"
	addrs     []string
	authAddrs []string
	cluster   *cluster // the open cluster, for CONTROL; nil on a single node
	// membership is the membership scenario's run, for CONTROL membership;
	// nil in the other modes.
	membership *membership
	// faults is the faults scenario's run, for CONTROL faults and the
	// CALLS lines; nil in the other modes.
	faults  *faultRun
	timeout time.Duration
}

// runScenario runs p against t and returns its results. A program that
// fails, hangs or prints no result gives a FAIL row of its own.
func runScenario(p scenarioProgram, t target, prefix string) []result {
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	cmd := programCommand(ctx, p.argv)
	cmd.Env = append(cmd.Env,
		"COMPAT_MODE="+t.mode,
		"COMPAT_ADDRS="+strings.Join(t.addrs, ","),
		"COMPAT_AUTH_ADDRS="+strings.Join(t.authAddrs, ","),
		"COMPAT_PASSWORD="+password,
		"COMPAT_PREFIX="+prefix,
	)
	if t.cluster != nil {
		keys, err := t.cluster.shardKeys(ctx, prefix)
		var ranges []slotRange
		if err == nil {
			ranges, err = t.cluster.slotRanges(ctx)
		}
		if err != nil {
			return []result{{client: p.client, mode: t.mode, name: "(run)", status: statusFail, detail: err.Error()}}
		}
		var leaders []string
		for _, r := range ranges {
			leaders = append(leaders, r.leader)
		}
		cmd.Env = append(cmd.Env, "COMPAT_SHARD_KEYS="+strings.Join(keys, ","), "COMPAT_SHARD_LEADERS="+strings.Join(leaders, ","))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		panic(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return []result{{client: p.client, mode: t.mode, name: "(run)", status: statusFail, detail: err.Error()}}
	}
	results, other := readOutput(p, t, stdout, stdin)
	version := ""
	if len(results) > 0 {
		version = results[len(results)-1].version
	}
	err = cmd.Wait()
	stdin.Close()
	logf("  (%s %s: %.1fs)", p.client, t.mode, time.Since(start).Seconds())
	if err != nil || len(results) == 0 {
		why := fmt.Sprint(err)
		if ctx.Err() != nil {
			why = fmt.Sprintf("killed after %v", t.timeout)
		}
		tail := strings.TrimSpace(stderr.String() + "\n" + strings.Join(other, "\n"))
		if len(tail) > 1500 {
			tail = "..." + tail[len(tail)-1500:]
		}
		results = append(results, result{client: p.client, version: version, mode: t.mode, name: "(run)",
			status: statusFail, detail: fmt.Sprintf("scenario program: %s; output: %s", why, tail)})
	} else if *verbose && stderr.Len() > 0 {
		logf("  stderr: %s", stderr.String())
	}
	return results
}

// readOutput reads a scenario program's output until it ends: its RESULT
// lines as results, its CONTROL lines carried out and answered on stdin,
// its CALLS lines handed to the faults scenario; the other lines are
// returned as they are, for a failure's report.
func readOutput(p scenarioProgram, t target, stdout io.Reader, stdin io.Writer) (results []result, other []string) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "RESULT\t"):
			f := strings.SplitN(line, "\t", 7)
			if len(f) != 7 {
				other = append(other, line)
				continue
			}
			r := result{client: f[1], version: f[2], mode: f[3], name: f[4], status: f[5], detail: f[6]}
			logf("  %-9s %-8s %-10s %-8s %-18s %s", r.status, r.client, r.version, r.mode, r.name, r.detail)
			results = append(results, r)
		case strings.HasPrefix(line, "CALLS\t") && t.faults != nil:
			if err := t.faults.record(p.client, strings.Split(line, "\t")[1:]); err != nil {
				other = append(other, err.Error())
			}
		case strings.HasPrefix(line, "CONTROL\t"):
			answer := control(t, strings.Split(line, "\t")[1:])
			logf("  control %s -> %s", strings.Join(strings.Split(line, "\t")[1:], " "), answer)
			io.WriteString(stdin, answer+"\n")
		default:
			other = append(other, line)
		}
	}
	return results, other
}

// control carries out a scenario's CONTROL request and returns the answer
// line: "OK\t<detail>" or "ERR\t<why>".
func control(t target, args []string) string {
	if t.cluster == nil {
		return "ERR\tno cluster to control"
	}
	switch {
	case len(args) == 2 && args[0] == "membership" && t.membership != nil:
		return t.membership.arrive(args[1])
	case len(args) == 2 && args[0] == "faults" && args[1] == "run" && t.faults != nil:
		return t.faults.arrive()
	case len(args) == 2 && args[0] == "kill-leader":
		killed, err := t.cluster.killLeaderOf(args[1])
		if err != nil {
			return "ERR\t" + err.Error()
		}
		return "OK\t" + killed
	case len(args) == 1 && args[0] == "restart":
		balanced, err := t.cluster.waitHealthy()
		if err != nil {
			return "ERR\t" + err.Error()
		}
		if !balanced {
			return fmt.Sprintf("OK\trestarted; leaders not back on their preferred nodes after %v", balanceTimeout)
		}
		return "OK\trestarted; every shard led by its preferred node"
	}
	return fmt.Sprintf("ERR\tunknown control %q", args)
}

// programCommand is the command that runs a scenario program, argv, in
// tests/compat with the driver's environment; when ctx ends, the program
// and its children are killed.
func programCommand(ctx context.Context, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = *compatDir
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
