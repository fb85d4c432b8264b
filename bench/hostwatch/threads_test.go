//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sampleOnce runs one sample and returns its threads lines by pid.
func sampleOnce(t *testing.T, tw *threadWatch, now time.Time) map[string]string {
	t.Helper()
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	tw.sample(w, now)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(l, ",")
		if len(f) > 3 && f[1] == "threads" {
			lines[f[2]] = l
		}
	}
	return lines
}

// A process named is found at the first sample, its threads read from
// files kept open between samples, and forgotten once it has ended.
func TestThreadWatchFollowsAProcess(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skip("no sleep to watch:", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)

	tw := newThreadWatch(map[string]bool{"sleep": true}, time.Hour)
	start := time.Now()
	line := sampleOnce(t, tw, start)[pid]
	// sleep has one thread, its tid its pid.
	if !strings.HasPrefix(line, strconv.FormatInt(start.UnixMilli(), 10)+",threads,"+pid+",sleep,"+pid+":") {
		t.Fatalf("first sample: %q", line)
	}
	opened := tw.procs[pid].threads[pid]
	if opened == nil {
		t.Fatal("the thread's files are not kept")
	}
	if line := sampleOnce(t, tw, start.Add(10*time.Millisecond))[pid]; line == "" {
		t.Fatal("second sample: no line")
	}
	if tw.procs[pid].threads[pid] != opened {
		t.Fatal("the thread's files were opened again")
	}

	_ = child.Process.Kill()
	_ = child.Wait()
	if lines := sampleOnce(t, tw, start.Add(20*time.Millisecond)); lines[pid] != "" {
		t.Fatalf("an ended process sampled: %q", lines[pid])
	}
	if _, ok := tw.procs[pid]; ok {
		t.Fatal("an ended process still watched")
	}
}

// A process started after a scan is found at the next one, not before.
func TestThreadWatchRescans(t *testing.T) {
	tw := newThreadWatch(map[string]bool{"sleep": true}, time.Second)
	start := time.Now()
	sampleOnce(t, tw, start) // scans: finds no sleep of this test's
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Skip("no sleep to watch:", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := strconv.Itoa(child.Process.Pid)
	if sampleOnce(t, tw, start.Add(500*time.Millisecond))[pid] != "" {
		t.Fatal("found before the rescan is due")
	}
	if sampleOnce(t, tw, start.Add(time.Second))[pid] == "" {
		t.Fatal("not found at the rescan")
	}
}
