package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// window is a snapshot of one shard, from the moment the shard began to
// capture its state to the moment the snapshot was written and released;
// held is how long the shard itself waited, at the start.
type window struct {
	start, end time.Time
	held, took time.Duration
	copies     int64 // chunks the shard copied meanwhile
	copied     int64 // their bytes
}

// snapshotLine is the message rlserver logs when a snapshot is done.
const snapshotLine = "shard snapshot written"

// electionLines are hashicorp/raft's messages for a leadership lost: a
// request then may be answered TRYAGAIN whatever snapshots do.
var electionLines = []string{"heartbeat timeout reached, starting election", "stepping down"}

// readWindows reads the snapshots' windows from rlserver's logs (the text
// format: key=value), and the instants of its elections.
func readWindows(paths []string) ([]window, []time.Time, error) {
	var ws []window
	var elections []time.Time
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			if election(sc.Text()) {
				if t, err := time.Parse(time.RFC3339Nano, logFields(sc.Text())["time"]); err == nil {
					elections = append(elections, t)
				}
			}
			if !strings.Contains(sc.Text(), snapshotLine) {
				continue
			}
			w, err := parseWindow(sc.Text())
			if err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("%s: %w", p, err)
			}
			ws = append(ws, w)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, nil, err
		}
	}
	slices.SortFunc(ws, func(a, b window) int { return a.start.Compare(b.start) })
	return ws, elections, nil
}

// election reports whether a log line says a leadership was lost.
func election(line string) bool {
	for _, m := range electionLines {
		if strings.Contains(line, m) {
			return true
		}
	}
	return false
}

// nearElection reports whether s was in flight within electionSpan of an
// election, or answered TRYAGAIN within it (a request waits up to the
// request timeout before it is).
func nearElection(s sample, elections []time.Time) bool {
	const electionSpan = 2 * time.Second
	end := s.due().Add(s.latency)
	for _, e := range elections {
		if s.due().Before(e.Add(electionSpan)) && end.After(e.Add(-electionSpan)) {
			return true
		}
	}
	return false
}

// parseWindow reads one snapshotLine's fields.
func parseWindow(line string) (window, error) {
	f := logFields(line)
	end, err := time.Parse(time.RFC3339Nano, f["time"])
	if err != nil {
		return window{}, fmt.Errorf("time of %q: %w", line, err)
	}
	held, err1 := time.ParseDuration(f["held"])
	took, err2 := time.ParseDuration(f["took"])
	copies, err3 := strconv.ParseInt(f["chunk_copies"], 10, 64)
	copied, err4 := strconv.ParseInt(f["copied_bytes"], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return window{}, fmt.Errorf("held, took, chunk_copies or copied_bytes of %q", line)
	}
	return window{start: end.Add(-took - held), end: end, held: held, took: took, copies: copies, copied: copied}, nil
}

// logFields splits a text log line into its key=value fields, a quoted
// value unquoted.
func logFields(line string) map[string]string {
	f := make(map[string]string)
	for line != "" {
		line = strings.TrimLeft(line, " ")
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			break
		}
		key, rest := line[:eq], line[eq+1:]
		var value string
		if strings.HasPrefix(rest, `"`) {
			if q, err := strconv.QuotedPrefix(rest); err == nil {
				value, _ = strconv.Unquote(q)
				rest = rest[len(q):]
			}
		} else {
			sp := strings.IndexByte(rest, ' ')
			if sp < 0 {
				sp = len(rest)
			}
			value, rest = rest[:sp], rest[sp:]
		}
		f[key] = value
		line = rest
	}
	return f
}

// during reports whether s was in flight while a snapshot was taken or
// written.
func during(s sample, ws []window) bool {
	end := s.due().Add(s.latency)
	for _, w := range ws {
		if s.due().Before(w.end) && end.After(w.start) {
			return true
		}
	}
	return false
}

// whileHeld reports whether s was in flight while a snapshot held its
// shard (the start of its window, for held).
func whileHeld(s sample, ws []window) bool {
	end := s.due().Add(s.latency)
	for _, w := range ws {
		if s.due().Before(w.start.Add(w.held)) && end.After(w.start) {
			return true
		}
	}
	return false
}

// describeWindows sums the windows up: the longest time a shard was held,
// the median and longest write, and the chunks copied.
func describeWindows(ws []window) string {
	if len(ws) == 0 {
		return "none"
	}
	var held, took []time.Duration
	var copies, copied int64
	for _, w := range ws {
		held, took = append(held, w.held), append(took, w.took)
		copies, copied = copies+w.copies, copied+w.copied
	}
	slices.Sort(held)
	slices.Sort(took)
	return fmt.Sprintf("shard held %v median, %v at most; written in %v median, %v at most; %d chunks copied (%.1f MiB)",
		held[len(held)/2], held[len(held)-1], took[len(took)/2], took[len(took)-1], copies, float64(copied)/(1<<20))
}

// writeSeries writes, for each 100 ms of due times from the first sample,
// the time (ms since the first), the requests, their p99 and maximum
// latencies in ms, the TRYAGAIN replies, 1 when a snapshot window
// overlaps the interval, and the interval's start in Unix ms (to line it
// up with the nodes' logs and anything else sampled on the host).
func writeSeries(path string, samples []sample, ws []window) error {
	const step = 100 * time.Millisecond
	first := samples[0].due()
	for _, s := range samples {
		if s.due().Before(first) {
			first = s.due()
		}
	}
	buckets := make(map[int][]sample)
	last := 0
	for _, s := range samples {
		b := int(s.due().Sub(first) / step)
		buckets[b] = append(buckets[b], s)
		last = max(last, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "ms,requests,p99_ms,max_ms,tryagain,snapshot,unix_ms")
	for b := 0; b <= last; b++ {
		from := first.Add(time.Duration(b) * step)
		in := 0
		for _, x := range ws {
			if from.Before(x.end) && from.Add(step).After(x.start) {
				in = 1
			}
		}
		s := buckets[b]
		lat := make([]time.Duration, 0, len(s))
		tryAgain := 0
		for _, x := range s {
			lat = append(lat, x.latency)
			if x.tryAgain {
				tryAgain++
			}
		}
		slices.Sort(lat)
		p99, top := 0.0, 0.0
		if len(lat) > 0 {
			p99 = lat[min(len(lat)-1, len(lat)*99/100)].Seconds() * 1000
			top = lat[len(lat)-1].Seconds() * 1000
		}
		fmt.Fprintf(w, "%d,%d,%.3f,%.3f,%d,%d,%d\n", b*int(step/time.Millisecond), len(s), p99, top, tryAgain, in, from.UnixMilli())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
