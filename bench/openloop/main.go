// Command openloop sends a Redis-protocol command at a fixed rate, whatever
// the server's answers do, and reports the latency percentiles of the
// replies, measured without coordinated omission: each request's latency
// runs from the moment the schedule said to send it, not from when it was
// sent, so a server that stalls is charged for every request the stall
// delayed (a closed-loop benchmark such as redis-benchmark waits for the
// reply before sending, and so never sees the requests a stall held back).
//
//	openloop -addr 127.0.0.1:6380 -rate 20000 -conns 50 -duration 10s RL.SLIDING user:__rand_int__ 100 60000
//	openloop -addr 127.0.0.1:6379 -rate 20000 -keys 100000 EVALSHA <sha> 1 user:__rand_int__ 100 60000 -1
//
// The requests are spread evenly over the connections and the time; a
// connection does not wait for a reply before its next request, so several
// may be in flight on it (pipelined). __rand_int__ in an argument becomes a
// random key number below -keys, written as redis-benchmark writes it. It
// prints one CSV line: the rate asked, the rate achieved, the replies' p50,
// p90, p99, p99.9 and maximum in milliseconds, and the p99 of how late the
// generator itself sent (its own share of the latency on a busy machine).
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
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "server address")
	rate := flag.Float64("rate", 10000, "requests a second, over all connections")
	conns := flag.Int("conns", 50, "connections")
	duration := flag.Duration("duration", 10*time.Second, "how long to send (after the warm-up)")
	warmup := flag.Duration("warmup", 2*time.Second, "how long to send before measuring")
	keys := flag.Int("keys", 100_000, "random key numbers are below this")
	header := flag.Bool("header", false, "print the CSV header first")
	flag.Parse()
	if flag.NArg() == 0 || *rate <= 0 || *conns < 1 || *keys < 1 {
		fmt.Fprintln(os.Stderr, "usage: openloop [-addr a] [-rate r] [-conns n] [-duration d] [-keys k] COMMAND ARGS...")
		os.Exit(2)
	}
	res, err := run(*addr, *rate, *conns, *warmup, *duration, *keys, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "openloop:", err)
		os.Exit(1)
	}
	if *header {
		fmt.Println("rate,achieved,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,send_late_p99_ms")
	}
	fmt.Println(res)
}

// result is one run's figures.
type result struct {
	rate, achieved                 float64
	p50, p90, p99, p999, max, late time.Duration
}

func (r result) String() string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 3, 64) }
	return fmt.Sprintf("%.0f,%.0f,%s,%s,%s,%s,%s,%s", r.rate, r.achieved,
		ms(r.p50), ms(r.p90), ms(r.p99), ms(r.p999), ms(r.max), ms(r.late))
}

// conn is one connection's schedule and what it measured.
type conn struct {
	nc        net.Conn
	w         *bufio.Writer
	r         *bufio.Reader
	rng       *rand.Rand
	pending   chan time.Time // intended send times of the requests in flight, in order
	latencies []time.Duration
	late      []time.Duration
	err       error
}

func run(addr string, rate float64, nconns int, warmup, duration time.Duration, keys int, args []string) (result, error) {
	cs := make([]*conn, nconns)
	for i := range cs {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return result{}, err
		}
		defer nc.Close()
		cs[i] = &conn{
			nc: nc, w: bufio.NewWriterSize(nc, 1<<14), r: bufio.NewReaderSize(nc, 1<<14),
			rng:     rand.New(rand.NewPCG(uint64(i), 17)),
			pending: make(chan time.Time, 1<<14),
		}
	}
	interval := time.Duration(float64(time.Second) * float64(nconns) / rate)
	start := time.Now().Add(10 * time.Millisecond)
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(duration)
	var wg sync.WaitGroup
	for i, c := range cs {
		// Each connection's schedule is offset so that the sends interleave.
		first := start.Add(interval * time.Duration(i) / time.Duration(nconns))
		wg.Add(2)
		go func() { defer wg.Done(); c.send(first, interval, end, keys, args) }()
		go func() { defer wg.Done(); c.receive(measureFrom) }()
	}
	wg.Wait()
	var all, late []time.Duration
	for _, c := range cs {
		if c.err != nil {
			return result{}, c.err
		}
		all = append(all, c.latencies...)
		late = append(late, c.late...)
	}
	if len(all) == 0 {
		return result{}, errors.New("no replies measured")
	}
	slices.Sort(all)
	slices.Sort(late)
	q := func(s []time.Duration, f float64) time.Duration { return s[min(len(s)-1, int(f*float64(len(s))))] }
	return result{
		rate: rate, achieved: float64(len(all)) / duration.Seconds(),
		p50: q(all, 0.50), p90: q(all, 0.90), p99: q(all, 0.99), p999: q(all, 0.999), max: all[len(all)-1],
		late: q(late, 0.99),
	}, nil
}

// send writes the requests due by now, one write for all that are due, and
// sleeps until the next is; it closes pending when the schedule ends.
func (c *conn) send(next time.Time, interval time.Duration, end time.Time, keys int, args []string) {
	defer close(c.pending)
	for next.Before(end) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		for ; !next.After(now) && next.Before(end); next = next.Add(interval) {
			c.writeCommand(args, keys)
			c.pending <- next
			c.late = append(c.late, now.Sub(next))
		}
		if err := c.w.Flush(); err != nil {
			c.err = err
			return
		}
	}
}

// receive reads the replies in order and charges each from its intended
// send time; replies to requests scheduled before measureFrom are not
// counted (the warm-up).
func (c *conn) receive(measureFrom time.Time) {
	for intended := range c.pending {
		if err := readReply(c.r); err != nil {
			c.err = err
			c.nc.Close() // the sender's next write fails and it stops
			for range c.pending {
			}
			return
		}
		if !intended.Before(measureFrom) {
			c.latencies = append(c.latencies, time.Since(intended))
		}
	}
}

// writeCommand writes args as a RESP array, __rand_int__ replaced by a
// random number below keys in twelve digits, as redis-benchmark writes it.
func (c *conn) writeCommand(args []string, keys int) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		if i := strings.Index(a, "__rand_int__"); i >= 0 {
			a = fmt.Sprintf("%s%012d%s", a[:i], c.rng.IntN(keys), a[i+len("__rand_int__"):])
		}
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// readReply reads one reply of any type; an error reply is an error.
func readReply(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("malformed reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '-':
		return fmt.Errorf("server error: %s", body)
	case '+', ':':
		return nil
	case '$':
		size, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if size >= 0 {
			_, err = r.Discard(size + 2)
		}
		return err
	case '*':
		count, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		for range count {
			if err := readReply(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}
