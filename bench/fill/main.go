// Command fill loads N distinct limiter keys into a server, pipelined, for
// the memory measurement of bench/run: RL.SLIDING key 100 60000 on rlserver,
// or the seed article's script through EVALSHA on Redis.
//
//	fill -addr 127.0.0.1:6380 -n 1000000
//	fill -addr 127.0.0.1:6379 -n 1000000 -evalsha <sha>
//	fill -addr 127.0.0.1:6380 -from 100000 -n 900000 -pad   # keys 100000 to 999999, named as redis-benchmark names them
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "server address")
	n := flag.Int("n", 1_000_000, "distinct keys to create")
	sha := flag.String("evalsha", "", "run the seed script with this SHA instead of RL.SLIDING")
	from := flag.Int("from", 0, "the first key's number")
	window := flag.Int("window", 60000, "the limit's window in ms: keys expire two windows after their last decision, so a load that takes longer needs a longer one")
	pad := flag.Bool("pad", false, "name keys as redis-benchmark's __rand_int__ does (user:000000000042), so that a benchmark with -r finds them")
	flag.Parse()
	name := func(i int) string { return "user:" + strconv.Itoa(i) }
	if *pad {
		name = func(i int) string { return fmt.Sprintf("user:%012d", i) }
	}
	if err := fill(*addr, *from, *n, *sha, strconv.Itoa(*window), name); err != nil {
		fmt.Fprintln(os.Stderr, "fill:", err)
		os.Exit(1)
	}
}

// fill creates keys from to from+n-1 (named by name), limits of 100 in
// window milliseconds. It sends the commands in pipelines of 1000 and checks every reply is a
// decision (an array), not an error. A command answered TRYAGAIN (its
// shard did not answer in time: a durable shard stalls while it takes a
// snapshot of a large keyspace) is sent again, and counted on stderr; for
// loading keys, counting one twice does no harm.
func fill(addr string, from, n int, sha, window string, name func(int) string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 1<<16)
	r := bufio.NewReaderSize(conn, 1<<16)
	const batch = 1000
	retried := 0
	keys := make([]int, 0, batch)
	for start := from; start < from+n; start += batch {
		keys = keys[:0]
		for i := start; i < min(start+batch, from+n); i++ {
			keys = append(keys, i)
		}
		for attempt := 0; len(keys) > 0; attempt++ {
			if attempt == 10 {
				return fmt.Errorf("key %d: TRYAGAIN %d times", keys[0], attempt)
			}
			for _, i := range keys {
				key := name(i)
				if sha != "" {
					writeCommand(w, "EVALSHA", sha, "1", key, "100", window, "-1")
				} else {
					writeCommand(w, "RL.SLIDING", key, "100", window)
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			again := keys[:0]
			for _, i := range keys {
				err := readReply(r)
				if errors.Is(err, errTryAgain) {
					again = append(again, i)
					continue
				}
				if err != nil {
					return fmt.Errorf("key %d: %w", i, err)
				}
			}
			retried += len(again)
			keys = again
		}
	}
	if retried > 0 {
		fmt.Fprintf(os.Stderr, "fill: %d commands answered TRYAGAIN, sent again\n", retried)
	}
	return nil
}

// errTryAgain is a TRYAGAIN reply.
var errTryAgain = errors.New("TRYAGAIN")

func writeCommand(w *bufio.Writer, args ...string) {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// readReply reads one reply: an array of integers, or an error.
func readReply(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '-':
		if strings.HasPrefix(line, "-TRYAGAIN ") {
			return fmt.Errorf("%w: %s", errTryAgain, line[1:len(line)-2])
		}
		return fmt.Errorf("server error: %s", line[1:len(line)-2])
	case '*':
		count, err := strconv.Atoi(line[1 : len(line)-2])
		if err != nil {
			return err
		}
		for range count {
			if err := readReply(r); err != nil {
				return err
			}
		}
	case ':', '+', '$':
		if line[0] == '$' {
			size, _ := strconv.Atoi(line[1 : len(line)-2])
			if size >= 0 {
				if _, err := r.Discard(size + 2); err != nil {
					return err
				}
			}
		}
	default:
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}
