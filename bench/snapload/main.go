// Command snapload measures what snapshots cost a durable rlserver under a
// steady load: it sends RL.SLIDING at a fixed rate (open loop, each
// request's latency charged from the moment the schedule said to send it,
// as bench/openloop does), routed to the node leading each key's shard,
// counts the TRYAGAIN replies (and UNCERTAIN, its kin for a decision that
// may have been counted), and splits the latencies between the
// requests in flight while a shard was writing a snapshot and the others,
// from the servers' logs ("shard snapshot written", with how long the
// shard was held and how long the writing took).
//
//	snapload -addrs 127.0.0.1:6380 -rate 20000 -keys 1000000 -duration 60s -logs node.log
//	snapload -addrs 127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382 -logs n1.log,n2.log,n3.log ...
//	snapload -addrs 127.0.0.1:6380 -duration 30m -until /tmp/moved ...   # until the file exists
//
// Keys are named as bench/fill -pad names them (user:000000000042), so a
// load after a fill finds every key. It prints a summary, then one CSV line
// for each of all requests, those during snapshots and those outside.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addrs := flag.String("addrs", "127.0.0.1:6380", "the nodes, comma-separated; each key goes to the one CLUSTER SLOTS names")
	rate := flag.Float64("rate", 10000, "requests a second, over all connections")
	conns := flag.Int("conns", 16, "connections to each node")
	duration := flag.Duration("duration", 60*time.Second, "how long to measure (after the warm-up)")
	warmup := flag.Duration("warmup", 2*time.Second, "how long to send before measuring")
	keys := flag.Int("keys", 1_000_000, "keys are user:<n> for n below this, twelve digits")
	logs := flag.String("logs", "", "the nodes' log files, comma-separated, read for the snapshots' windows after the run")
	label := flag.String("label", "", "a label for the CSV lines")
	series := flag.String("series", "", "also write the latencies over time to this file: per 100 ms of due times, the requests, their p99 and maximum, and whether a snapshot was in progress")
	until := flag.String("until", "", "end the load once this file exists (looked for every 10 ms), or after -duration, whichever comes first")
	flag.Parse()
	if *rate <= 0 || *conns < 1 || *keys < 1 {
		fmt.Fprintln(os.Stderr, "snapload: -rate, -conns and -keys must be positive")
		os.Exit(2)
	}
	samples, measured, err := load(strings.Split(*addrs, ","), *rate, *conns, *keys, *warmup, *duration, *until)
	if err != nil {
		fmt.Fprintln(os.Stderr, "snapload:", err)
		os.Exit(1)
	}
	var windows []window
	var elections []time.Time
	if *logs != "" {
		if windows, elections, err = readWindows(strings.Split(*logs, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "snapload:", err)
			os.Exit(1)
		}
	}
	report(os.Stdout, *label, samples, windows, elections, measured)
	if *series != "" {
		if err := writeSeries(*series, samples, windows); err != nil {
			fmt.Fprintln(os.Stderr, "snapload:", err)
			os.Exit(1)
		}
	}
}

// sample is one request: when it was due, how long its reply took from
// then, and whether it was refused with TRYAGAIN. It holds no pointer, nor
// does the channel of due times, so that the collector of this process
// never scans the millions kept: its marks would delay the replies' reads,
// and the server would be charged with them (they came every few seconds,
// at the same moments in every run, before).
type sample struct {
	dueNs    int64 // Unix ns
	latency  time.Duration
	tryAgain bool
}

// due is when the request was due.
func (s sample) due() time.Time { return time.Unix(0, s.dueNs) }

// load runs the schedule over every node's connections and returns the
// samples of the measured part and how long it lasted: duration, or less
// when the file until names appeared earlier.
func load(addrs []string, rate float64, conns, keys int, warmup, duration time.Duration, until string) ([]sample, time.Duration, error) {
	pools, err := keyPools(addrs, keys)
	if err != nil {
		return nil, 0, err
	}
	var cs []*conn
	for n, addr := range addrs {
		for i := range conns {
			c, err := dial(addr, pools[n], uint64(n*conns+i))
			if err != nil {
				return nil, 0, err
			}
			defer c.nc.Close()
			cs = append(cs, c)
		}
	}
	interval := time.Duration(float64(time.Second) * float64(len(cs)) / rate)
	for _, c := range cs {
		c.samples = make([]sample, 0, int(duration/interval)+64) // no copy as they come
	}
	start := time.Now().Add(10 * time.Millisecond)
	measureFrom := start.Add(warmup)
	end := &schedule{}
	end.at.Store(measureFrom.Add(duration).UnixNano())
	if until != "" {
		stop := make(chan struct{})
		defer close(stop)
		go end.watch(until, stop)
	}
	var wg sync.WaitGroup
	for i, c := range cs {
		first := start.Add(interval * time.Duration(i) / time.Duration(len(cs)))
		wg.Add(2)
		go func() { defer wg.Done(); c.send(first, interval, end) }()
		go func() { defer wg.Done(); c.receive(measureFrom) }()
	}
	wg.Wait()
	var all []sample
	for _, c := range cs {
		if c.err != nil { // what the replies said first: a write fails after
			return nil, 0, c.err
		}
		if c.sendErr != nil {
			return nil, 0, c.sendErr
		}
		all = append(all, c.samples...)
	}
	if len(all) == 0 {
		return nil, 0, errors.New("no replies measured")
	}
	return all, max(0, end.time().Sub(measureFrom)), nil
}

// schedule is when the load ends, which watch brings forward once a file
// exists: a script ends the load when what it measures is over.
type schedule struct{ at atomic.Int64 } // Unix ns

func (s *schedule) time() time.Time { return time.Unix(0, s.at.Load()) }

// watch brings the end forward to the moment path exists, if that is
// earlier; it returns then, at the end, or when stop is closed.
func (s *schedule) watch(path string, stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			if now.After(s.time()) {
				return
			}
			if _, err := os.Stat(path); err == nil {
				s.at.Store(now.UnixNano())
				return
			}
		}
	}
}

// conn is one connection's schedule and what it measured.
type conn struct {
	nc      net.Conn
	w       *bufio.Writer
	r       *bufio.Reader
	rng     *rand.Rand
	keys    []int32    // the key numbers this node leads
	pending chan int64 // due times (Unix ns) of the requests in flight, in order
	samples []sample
	err     error // the receiver's
	sendErr error
}

func dial(addr string, keys []int32, seed uint64) (*conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{
		nc: nc, w: bufio.NewWriterSize(nc, 1<<14), r: bufio.NewReaderSize(nc, 1<<14),
		rng: rand.New(rand.NewPCG(seed, 23)), keys: keys, pending: make(chan int64, 1<<16),
	}, nil
}

// send writes the requests due by now, one write for all that are due, and
// sleeps until the next is; it closes pending when the schedule ends.
func (c *conn) send(next time.Time, interval time.Duration, s *schedule) {
	defer close(c.pending)
	for end := s.time(); next.Before(end); end = s.time() {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		for ; !next.After(now) && next.Before(end); next = next.Add(interval) {
			key := fmt.Sprintf("user:%012d", c.keys[c.rng.IntN(len(c.keys))])
			fmt.Fprintf(c.w, "*4\r\n$10\r\nRL.SLIDING\r\n$%d\r\n%s\r\n$3\r\n100\r\n$7\r\n3600000\r\n", len(key), key)
			c.pending <- next.UnixNano()
		}
		if err := c.w.Flush(); err != nil {
			c.sendErr = err
			return
		}
	}
}

// receive reads the replies in order; those of requests due before
// measureFrom are not kept (the warm-up).
func (c *conn) receive(measureFrom time.Time) {
	for due := range c.pending {
		v, err := readValue(c.r)
		tryAgain := false
		// UNCERTAIN is what a node answers instead of TRYAGAIN when the
		// decision may have been counted: both are a decision the shard
		// did not answer in time, and both count as TRYAGAIN here.
		if re, ok := err.(replyError); ok && (strings.HasPrefix(string(re), "TRYAGAIN") || strings.HasPrefix(string(re), "UNCERTAIN")) {
			tryAgain, err = true, nil
		}
		if err != nil {
			c.err = err
			c.nc.Close() // the sender's next write fails and it stops
			for range c.pending {
			}
			return
		}
		_ = v
		if due >= measureFrom.UnixNano() {
			c.samples = append(c.samples, sample{dueNs: due, latency: time.Since(time.Unix(0, due)), tryAgain: tryAgain})
		}
	}
}

// report prints the summary and the CSV lines.
func report(out *os.File, label string, samples []sample, windows []window, elections []time.Time, duration time.Duration) {
	var in, outside []sample
	tryAgain, nearElections, held := 0, 0, 0
	first, last := samples[0].due(), samples[0].due()
	for _, s := range samples {
		if during(s, windows) {
			in = append(in, s)
		} else {
			outside = append(outside, s)
		}
		first, last = minTime(first, s.due()), maxTime(last, s.due().Add(s.latency))
		if !s.tryAgain {
			continue
		}
		tryAgain++
		if nearElection(s, elections) {
			nearElections++
		}
		if whileHeld(s, windows) {
			held++
		}
	}
	n := 0
	for _, e := range elections {
		if !e.Before(first) && !e.After(last) {
			n++
		}
	}
	// The logs may cover more than the load (a script that runs several
	// loads against the same nodes): only the snapshots it overlapped count.
	windows = slices.DeleteFunc(slices.Clone(windows), func(w window) bool { return w.end.Before(first) || w.start.After(last) })
	fmt.Fprintf(out, "# %d requests in %v (%.0f/s); %d snapshots: %s; %d elections (leaderships lost) during the load; "+
		"of %d TRYAGAIN, %d in flight while a shard was held by a snapshot, %d within 2 s of an election\n",
		len(samples), duration, float64(len(samples))/duration.Seconds(), len(windows), describeWindows(windows),
		n, tryAgain, held, nearElections)
	fmt.Fprintln(out, "label,part,requests,tryagain,p50_ms,p99_ms,p999_ms,max_ms")
	for _, part := range []struct {
		name string
		s    []sample
	}{{"all", samples}, {"during", in}, {"outside", outside}} {
		fmt.Fprintf(out, "%s,%s,%s\n", label, part.name, figures(part.s))
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// figures are a part's count, TRYAGAIN count and latency percentiles.
func figures(s []sample) string {
	if len(s) == 0 {
		return "0,0,,,,"
	}
	lat := make([]time.Duration, len(s))
	tryAgain := 0
	for i, x := range s {
		lat[i] = x.latency
		if x.tryAgain {
			tryAgain++
		}
	}
	slices.Sort(lat)
	q := func(f float64) string {
		return fmt.Sprintf("%.3f", lat[min(len(lat)-1, int(f*float64(len(lat))))].Seconds()*1000)
	}
	return fmt.Sprintf("%d,%d,%s,%s,%s,%s", len(s), tryAgain, q(0.50), q(0.99), q(0.999), q(1))
}
