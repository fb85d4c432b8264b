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

// readWindows reads the snapshots' windows from rlserver's logs (the text
// format: key=value).
func readWindows(paths []string) ([]window, error) {
	var ws []window
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			if !strings.Contains(sc.Text(), snapshotLine) {
				continue
			}
			w, err := parseWindow(sc.Text())
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			ws = append(ws, w)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(ws, func(a, b window) int { return a.start.Compare(b.start) })
	return ws, nil
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
	end := s.due.Add(s.latency)
	for _, w := range ws {
		if s.due.Before(w.end) && end.After(w.start) {
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
