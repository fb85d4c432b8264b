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
//
// -idle n opens n more connections that send nothing during the run (a
// PING each before it, to be sure the server holds them, and after it, to
// be sure it still does): the idle share of a server's many clients.
// -closed measures the maximum instead: each connection sends its next
// request when the last is answered, and the rate asked is printed as 0.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
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
	idle := flag.Int("idle", 0, "connections held open beside the active ones, sending nothing during the run")
	closed := flag.Bool("closed", false, "closed loop: each connection sends when its last request is answered (-rate is ignored)")
	header := flag.Bool("header", false, "print the CSV header first")
	flag.Parse()
	if flag.NArg() == 0 || *rate <= 0 || *conns < 1 || *keys < 1 || *idle < 0 {
		fmt.Fprintln(os.Stderr, "usage: openloop [-addr a] [-rate r | -closed] [-conns n] [-idle n] [-duration d] [-keys k] COMMAND ARGS...")
		os.Exit(2)
	}
	if *closed {
		*rate = 0
	}
	held, err := holdIdle(*addr, *idle)
	if err == nil {
		var res result
		res, err = run(*addr, *rate, *conns, *warmup, *duration, *keys, flag.Args())
		if err == nil {
			err = held.check()
		}
		if err == nil {
			if *header {
				fmt.Println("rate,achieved,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,send_late_p99_ms")
			}
			fmt.Println(res)
		}
	}
	held.close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "openloop:", err)
		os.Exit(1)
	}
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
	err       error
}

func run(addr string, rate float64, nconns int, warmup, duration time.Duration, keys int, args []string) (result, error) {
	// A connection's queue of requests in flight holds two seconds of its
	// share of the rate (a stall longer than that holds its sender back, and
	// the requests it then sends late are still charged from their schedule):
	// ten thousand connections of 16,384 each would take gigabytes.
	inflight := 1 << 14
	if rate > 0 {
		inflight = min(inflight, max(64, int(2*rate/float64(nconns))))
	}
	cs := make([]*conn, nconns)
	for i := range cs {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return result{}, err
		}
		defer nc.Close()
		cs[i] = &conn{
			nc: nc, w: bufio.NewWriterSize(nc, 4096), r: bufio.NewReaderSize(nc, 4096),
			rng:     rand.New(rand.NewPCG(uint64(i), 17)),
			pending: make(chan time.Time, inflight),
		}
	}
	start := time.Now().Add(10 * time.Millisecond)
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(duration)
	for _, c := range cs {
		// A reply that never comes fails the run half a minute after its end.
		c.nc.SetDeadline(end.Add(30 * time.Second))
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		if rate == 0 {
			go func() { defer wg.Done(); c.closedLoop(measureFrom, end, keys, args) }()
		} else {
			go func() { defer wg.Done(); c.receive(measureFrom) }()
		}
	}
	var senders []*sender
	if rate > 0 {
		// A sender a processor, each with its share of the connections and
		// of the rate, their schedules offset so that the sends interleave.
		n := min(nconns, runtime.GOMAXPROCS(0))
		step := time.Duration(float64(time.Second) * float64(n) / rate)
		for j := range n {
			sd := &sender{cs: cs[j*nconns/n : (j+1)*nconns/n]}
			senders = append(senders, sd)
			first := start.Add(step * time.Duration(j) / time.Duration(n))
			wg.Add(1)
			go func() { defer wg.Done(); sd.send(first, step, end, keys, args) }()
		}
	}
	wg.Wait()
	return summarise(cs, senders, rate, duration)
}

// summarise puts the connections' measurements together.
func summarise(cs []*conn, senders []*sender, rate float64, duration time.Duration) (result, error) {
	var all, late []time.Duration
	for _, c := range cs {
		if c.err != nil {
			return result{}, c.err
		}
		all = append(all, c.latencies...)
	}
	for _, sd := range senders {
		late = append(late, sd.late...)
	}
	if len(all) == 0 {
		return result{}, errors.New("no replies measured")
	}
	if len(late) == 0 {
		late = []time.Duration{0} // closed loop: never late, by definition
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

// closedLoop sends a request, waits for its reply and sends the next, until
// end; the replies to requests sent from measureFrom are counted, each from
// when it was sent.
func (c *conn) closedLoop(measureFrom, end time.Time, keys int, args []string) {
	for {
		sent := time.Now()
		if !sent.Before(end) {
			return
		}
		c.writeCommand(args, keys)
		if err := c.w.Flush(); err != nil {
			c.err = err
			return
		}
		if err := readReply(c.r); err != nil {
			c.err = err
			return
		}
		if !sent.Before(measureFrom) {
			c.latencies = append(c.latencies, time.Since(sent))
		}
	}
}

// sender writes the requests of some connections on one schedule: a
// timer per connection would be ten thousand sleeping goroutines, whose
// wake-ups cost the generator more than its writes.
type sender struct {
	cs    []*conn
	late  []time.Duration
	dirty []*conn
}

// send writes the requests due by now, each to the next connection in
// turn, then flushes every connection written to, and sleeps until the next
// is due; it closes every connection's pending when the schedule ends.
func (s *sender) send(next time.Time, step time.Duration, end time.Time, keys int, args []string) {
	defer func() {
		for _, c := range s.cs {
			close(c.pending)
		}
	}()
	turn := 0
	for next.Before(end) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		for ; !next.After(now) && next.Before(end); next = next.Add(step) {
			c := s.cs[turn]
			turn = (turn + 1) % len(s.cs)
			if c.w.Buffered() == 0 {
				s.dirty = append(s.dirty, c)
			}
			c.writeCommand(args, keys)
			c.pending <- next
			s.late = append(s.late, now.Sub(next))
		}
		for _, c := range s.dirty {
			if err := c.w.Flush(); err != nil {
				c.err = err
				return
			}
		}
		s.dirty = s.dirty[:0]
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
