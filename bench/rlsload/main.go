// Command rlsload is the load generator of bench/rls: it calls
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit with the
// generated client, from a fixed number of concurrent callers spread over
// one or more servers, for a fixed time, and prints one JSON line:
// decisions (calls answered) per second, the answers, and the latency
// percentiles of the calls.
//
//	rlsload -addrs 127.0.0.1:8081,127.0.0.1:8082 -c 64 -d 10s
//
// Each call carries one descriptor, (user, uN) with N drawn uniformly from
// -users values, in domain -domain, so that the server's keys spread over
// its shards and some users go over their limit.
//
// The generator shares the machine's cores with the servers it measures,
// so it spends as little as it can: each user's request is built once, its
// collector runs rarely (-gogc), and its connections have fixed
// flow-control windows, as Envoy's do, instead of grpc-go's estimate, which
// pings the server about once a round trip. Every CPU microsecond it spends
// on a call is one the server under test does not get, and a heavy
// generator pulls every server's figure towards its own; it reports its own
// CPU time per call (generator_cpu_us) for that reason.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// result is what a run prints.
type result struct {
	// AllCalls counts the warm-up's calls too, to divide the servers' CPU
	// time by.
	AllCalls  int     `json:"all_calls"`
	Calls     int     `json:"calls"`
	OK        int     `json:"ok"`
	OverLimit int     `json:"over_limit"`
	Errors    int     `json:"errors"`
	PerSecond float64 `json:"decisions_per_s"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	// GeneratorCPU is this process's own CPU time (user and system) per
	// call, warm-up included: the share of the machine the servers
	// measured did not get.
	GeneratorCPU float64 `json:"generator_cpu_us"`
}

// worker is one caller's tally.
type worker struct {
	latencies            []time.Duration
	ok, over, errs, sent int
	all                  int // warm-up included
}

func main() {
	addrs := flag.String("addrs", "127.0.0.1:8081", "servers, comma separated: callers are spread over them")
	callers := flag.Int("c", 64, "concurrent callers")
	conns := flag.Int("conns", 4, "gRPC connections per server")
	dur := flag.Duration("d", 10*time.Second, "how long to call (after the warm-up)")
	warmup := flag.Duration("warmup", 2*time.Second, "calls before measuring, not counted")
	users := flag.Int("users", 1000, "distinct user values")
	domain := flag.String("domain", "bench", "the domain")
	timeout := flag.Duration("timeout", 5*time.Second, "bound on one call")
	gogc := flag.Int("gogc", 800, "the generator's own GOGC: collect rarely, to leave the CPU to the servers measured")
	flag.Parse()
	debug.SetGCPercent(*gogc)

	var clients []pb.RateLimitServiceClient
	for _, addr := range strings.Split(*addrs, ",") {
		for range *conns {
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithStaticStreamWindowSize(64<<10), grpc.WithStaticConnWindowSize(1<<20))
			if err != nil {
				fmt.Fprintln(os.Stderr, "rlsload:", err)
				os.Exit(1)
			}
			defer conn.Close()
			clients = append(clients, pb.NewRateLimitServiceClient(conn))
		}
	}
	// One request per user, built once: callers only read them, and
	// building one per call costs the generator CPU the servers then lack.
	reqs := make([]*pb.RateLimitRequest, *users)
	for i := range reqs {
		reqs[i] = &pb.RateLimitRequest{Domain: *domain, Descriptors: []*rlpb.RateLimitDescriptor{{
			Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: "u" + strconv.Itoa(i)}},
		}}}
	}

	call := func(c pb.RateLimitServiceClient, rng *rand.Rand, w *worker, measure bool) {
		req := reqs[rng.IntN(len(reqs))]
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		start := time.Now()
		resp, err := c.ShouldRateLimit(ctx, req)
		took := time.Since(start)
		cancel()
		w.all++
		if !measure {
			return
		}
		w.sent++
		w.latencies = append(w.latencies, took)
		switch {
		case err != nil:
			w.errs++
		case resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT:
			w.over++
		default:
			w.ok++
		}
	}

	cpuBefore, err := cpuTime()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlsload:", err)
		os.Exit(1)
	}
	workers := make([]worker, *callers)
	var wg sync.WaitGroup
	warmEnd := time.Now().Add(*warmup)
	end := warmEnd.Add(*dur)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			c := clients[i%len(clients)]
			for {
				now := time.Now()
				if now.After(end) {
					return
				}
				call(c, rng, &workers[i], !now.Before(warmEnd))
			}
		}()
	}
	wg.Wait()

	var r result
	var all []time.Duration
	for _, w := range workers {
		r.AllCalls += w.all
		r.Calls += w.sent
		r.OK += w.ok
		r.OverLimit += w.over
		r.Errors += w.errs
		all = append(all, w.latencies...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(int(p*float64(len(all))), len(all)-1)]) / float64(time.Millisecond)
	}
	r.PerSecond = float64(r.Calls-r.Errors) / dur.Seconds()
	r.P50ms, r.P99ms = pct(0.50), pct(0.99)
	cpuAfter, err := cpuTime()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlsload:", err)
		os.Exit(1)
	}
	if r.AllCalls > 0 {
		r.GeneratorCPU = float64(cpuAfter-cpuBefore) / float64(time.Microsecond) / float64(r.AllCalls)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("reading the generator's own CPU time: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
