package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// The limiters stage: the rate-limit libraries users already run against
// Redis, unchanged, each run against redis-server and against rlserver (a
// durable node and the three-node cluster) with the same scenario; the
// decisions they print must be the same, one for one. Every library here
// takes its time from the store or counts from the first hit, so the
// decisions of a run that takes a second do not depend on the clock.

// limiterProgram is one library's scenario program (tests/compat/node/
// limiters.js, python/limiters.py, gocompat redis_rate).
type limiterProgram struct {
	lib  string // as the table names it
	argv []string
}

// limiterPrograms are the libraries whose name matches filter (or
// "limiters").
func limiterPrograms(filter *regexp.Regexp) []limiterProgram {
	all := []limiterProgram{
		{"redis_rate", []string{*gocompatBin, "redis_rate"}},
		{"rate-limit-redis/ioredis", []string{*nodeBin, "node/limiters.js", "express-ioredis"}},
		{"rate-limit-redis/node-redis", []string{*nodeBin, "node/limiters.js", "express-node-redis"}},
		{"rate-limiter-flexible", []string{*nodeBin, "node/limiters.js", "flexible"}},
		{"python-limits", []string{*python, "python/limiters.py"}},
	}
	var out []limiterProgram
	for _, p := range all {
		if filter.MatchString(p.lib) || filter.MatchString("limiters") {
			out = append(out, p)
		}
	}
	return out
}

// limiterRun is what one run printed.
type limiterRun struct {
	version   string
	decisions []string // "step: outcome"
	err       error
}

// runLimiter runs p against the servers at addrs (mode single or cluster),
// its keys under prefix.
func runLimiter(p limiterProgram, mode string, addrs []string, prefix string) limiterRun {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := programCommand(ctx, p.argv)
	cmd.Env = append(cmd.Env, "LIMITER_MODE="+mode, "LIMITER_ADDRS="+strings.Join(addrs, ","), "LIMITER_PREFIX="+prefix)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r limiterRun
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Split(line, "\t")
		switch {
		case f[0] == "VERSION" && len(f) == 2:
			r.version = f[1]
		case f[0] == "DECISION" && len(f) == 3:
			r.decisions = append(r.decisions, f[1]+": "+f[2])
		}
	}
	if err != nil {
		r.err = fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	if *verbose && stderr.Len() > 0 {
		logf("  %s stderr:\n%s", p.lib, stderr.String())
	}
	return r
}

// compareLimiter is the result of p's run on rlserver (mode) against its
// run on Redis.
func compareLimiter(p limiterProgram, mode string, redis, rl limiterRun) result {
	r := result{client: p.lib, version: rl.version, mode: mode, name: "same as redis"}
	switch {
	case redis.err != nil:
		r.status, r.detail = statusFail, "on redis-server: "+redis.err.Error()
	case rl.err != nil:
		r.status, r.detail = statusFail, rl.err.Error()
	case len(rl.decisions) == 0:
		r.status, r.detail = statusFail, "no decision printed"
	default:
		r.status = statusPass
		r.detail = fmt.Sprintf("%d decisions identical to redis-server's (%s)", len(rl.decisions), rl.version)
		for i := range max(len(rl.decisions), len(redis.decisions)) {
			a, b := "(none)", "(none)"
			if i < len(redis.decisions) {
				a = redis.decisions[i]
			}
			if i < len(rl.decisions) {
				b = rl.decisions[i]
			}
			if a != b {
				r.status, r.detail = statusFail, fmt.Sprintf("decision %d: redis %q, rlserver %q", i+1, a, b)
				break
			}
		}
	}
	logf("  %-9s %-28s %-8s %s", r.status, r.client, r.mode, r.detail)
	return r
}

// redisServer is a redis-server on loopback, the reference.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis starts redis-server, without persistence, on a free port.
func startRedis(dir string) (*redisServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	rs := &redisServer{addr: addr, cmd: cmd}
	err = poll.Wait(10*time.Second, "redis-server to answer PING", func() (bool, error) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		c.Write([]byte("PING\r\n"))
		buf := make([]byte, 7)
		n, _ := c.Read(buf)
		return string(buf[:n]) == "+PONG\r\n", nil
	})
	if err != nil {
		rs.stop()
		return nil, fmt.Errorf("redis-server on %s: %w", addr, err)
	}
	return rs, nil
}

func (rs *redisServer) stop() {
	rs.cmd.Process.Kill()
	rs.cmd.Wait()
}

// runLimiters runs every limiter program against redis-server and against
// rlserver at addrs (mode), and compares.
func runLimiters(dir, mode string, addrs []string, filter *regexp.Regexp) []result {
	progs := limiterPrograms(filter)
	if len(progs) == 0 {
		return nil
	}
	logf("== limiters against redis-server and rlserver (%s)", mode)
	rs, err := startRedis(filepath.Join(dir, "redis-"+mode))
	if err != nil {
		return []result{{client: "rlserver", mode: mode, name: "limiters", status: statusFail, detail: err.Error()}}
	}
	defer rs.stop()
	var results []result
	for _, p := range progs {
		prefix := "lim:" + strings.NewReplacer("/", "-", "_", "-").Replace(p.lib) + ":"
		onRedis := runLimiter(p, "single", []string{rs.addr}, prefix)
		onRL := runLimiter(p, mode, addrs, prefix)
		results = append(results, compareLimiter(p, mode, onRedis, onRL))
	}
	return results
}
