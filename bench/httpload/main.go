// Command httpload is the load generator of bench/http: it asks one
// rlserver for decisions from a fixed number of callers, each on a
// connection of its own, one request at a time, over the Redis protocol or
// over the HTTP API (HTTP/1.1 with keep-alive, or HTTP/2 without TLS), for
// a fixed time, and prints one JSON line: decisions a second, their answers
// and the latency percentiles.
//
//	httpload -proto resp -addr 127.0.0.1:6380 -c 64 -d 10s
//	httpload -proto http -addr 127.0.0.1:8080 -c 64 -d 10s
//	httpload -proto h2c  -addr 127.0.0.1:8080 -c 64 -d 10s
//
// Each request is RL.TOKEN (the HTTP API's equivalent) on user:N, N drawn
// uniformly from -users values, so that the keys spread over the shards
// and some callers go over their limit. Requests are encoded once, so that
// the generator spends as little as it can of the cores it shares with the
// server; it reports its own CPU time per request (generator_cpu_us).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// result is what a run prints.
type result struct {
	Proto        string  `json:"proto"`
	AllCalls     int     `json:"all_calls"` // the warm-up's too
	Calls        int     `json:"calls"`
	Allowed      int     `json:"allowed"`
	Refused      int     `json:"refused"`
	Errors       int     `json:"errors"`
	PerSecond    float64 `json:"decisions_per_s"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	GeneratorCPU float64 `json:"generator_cpu_us"`
}

// caller sends one request and reports whether it was allowed.
type caller func(user int) (allowed bool, err error)

// tally is one caller's.
type tally struct {
	latencies             []time.Duration
	allowed, refused, bad int
	all                   int
}

func main() {
	proto := flag.String("proto", "resp", "resp, http (HTTP/1.1 with keep-alive) or h2c (HTTP/2 without TLS)")
	addr := flag.String("addr", "127.0.0.1:6380", "the server's port for the protocol")
	callers := flag.Int("c", 64, "concurrent callers, each on a connection of its own")
	dur := flag.Duration("d", 10*time.Second, "how long to measure (after the warm-up)")
	warmup := flag.Duration("warmup", 2*time.Second, "requests before measuring, not counted")
	users := flag.Int("users", 1000, "distinct keys")
	limit := flag.Int("limit", 50, "each key's tokens a second")
	gogc := flag.Int("gogc", 800, "the generator's own GOGC: collect rarely, to leave the CPU to the server")
	flag.Parse()
	debug.SetGCPercent(*gogc)

	calls := make([]caller, *callers)
	for i := range calls {
		var err error
		if calls[i], err = newCaller(*proto, *addr, *users, *limit); err != nil {
			fmt.Fprintln(os.Stderr, "httpload:", err)
			os.Exit(1)
		}
	}
	cpuBefore := cpuTime()
	tallies := make([]tally, *callers)
	var wg sync.WaitGroup
	warmEnd := time.Now().Add(*warmup)
	end := warmEnd.Add(*dur)
	for i := range tallies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			w := &tallies[i]
			for now := time.Now(); now.Before(end); now = time.Now() {
				allowed, err := calls[i](rng.IntN(*users))
				took := time.Since(now)
				w.all++
				if now.Before(warmEnd) {
					continue
				}
				w.latencies = append(w.latencies, took)
				switch {
				case err != nil:
					w.bad++
				case allowed:
					w.allowed++
				default:
					w.refused++
				}
			}
		}()
	}
	wg.Wait()
	print(*proto, tallies, *dur, cpuTime()-cpuBefore)
}

// print prints the run's result.
func print(proto string, tallies []tally, dur, cpu time.Duration) {
	r := result{Proto: proto}
	var all []time.Duration
	for _, w := range tallies {
		r.AllCalls += w.all
		r.Allowed += w.allowed
		r.Refused += w.refused
		r.Errors += w.bad
		all = append(all, w.latencies...)
	}
	r.Calls = len(all)
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(int(p*float64(len(all))), len(all)-1)]) / float64(time.Millisecond)
	}
	r.PerSecond = float64(r.Calls-r.Errors) / dur.Seconds()
	r.P50ms, r.P99ms = pct(0.50), pct(0.99)
	if r.AllCalls > 0 {
		r.GeneratorCPU = float64(cpu) / float64(time.Microsecond) / float64(r.AllCalls)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

// newCaller connects one caller.
func newCaller(proto, addr string, users, limit int) (caller, error) {
	switch proto {
	case "resp":
		return respCaller(addr, users, limit)
	case "http", "h2c":
		return httpCaller(proto, addr, users, limit), nil
	}
	return nil, fmt.Errorf("no protocol %q: resp, http or h2c", proto)
}

// respCaller asks over one RESP connection, each request encoded once.
func respCaller(addr string, users, limit int) (caller, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	reqs := make([][]byte, users)
	for u := range reqs {
		args := []string{"RL.TOKEN", "user:" + strconv.Itoa(u), strconv.Itoa(limit), strconv.Itoa(limit), "1000"}
		b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
		for _, a := range args {
			b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
		}
		reqs[u] = b
	}
	r := bufio.NewReader(conn)
	return func(user int) (bool, error) {
		if _, err := conn.Write(reqs[user]); err != nil {
			return false, err
		}
		head, err := r.ReadSlice('\n')
		if err != nil || len(head) < 2 || head[0] != '*' {
			return false, fmt.Errorf("reply %q: %v", head, err)
		}
		allowed := false
		for i := range 5 {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return false, err
			}
			if i == 0 {
				allowed = bytes.Equal(line, []byte(":1\r\n"))
			}
		}
		return allowed, nil
	}, nil
}

// httpCaller asks over one HTTP connection (a transport of its own, one
// connection at most), each body encoded once.
func httpCaller(proto, addr string, users, limit int) caller {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}
	if proto == "h2c" {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	bodies := make([][]byte, users)
	for u := range bodies {
		bodies[u] = fmt.Appendf(nil, `{"key":"user:%d","algorithm":"token","parameters":{"capacity":%d,"refill_tokens":%d,"refill_ms":1000}}`, u, limit, limit)
	}
	url := "http://" + addr + "/v1/decide"
	var buf []byte
	return func(user int) (bool, error) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(bodies[user]))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return false, err
		}
		buf, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%d %s %v", res.StatusCode, buf, err)
		}
		return bytes.HasPrefix(buf, []byte(`{"allowed":true`)), nil
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
