//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// threadWatch samples the threads of the processes it watches. What costs
// is opening files, not reading them: globbing /proc and opening every
// process's comm and every thread's two files at each sample took 0.22 of
// a processor watching an idle 3-node cluster's 27 threads every 10 ms, on
// the very CPUs it measures. So it looks for the processes only every
// rescan, lists each one's threads at each sample (one small directory,
// so that a thread started meanwhile, an encoder's, is seen at once), and
// keeps each thread's stat and schedstat open, reading them again from the
// start (a /proc file is generated afresh at each read from offset 0):
// 0.10 of a processor for the same, 0.04 of it the 1 ms sleeps and the
// host's samples (docs/performance.md, "A new replica's catch-up").
type threadWatch struct {
	names   map[string]bool
	rescan  time.Duration
	scanned time.Time
	procs   map[string]*watchedProc // by pid
	buf     []byte
}

// watchedProc is a process being watched and its threads, by tid.
type watchedProc struct {
	comm    string
	threads map[string]*watchedThread
}

// watchedThread holds a thread's files open between samples.
type watchedThread struct {
	stat, sched *os.File
	seen        bool // listed at this sample
}

func newThreadWatch(names map[string]bool, rescan time.Duration) *threadWatch {
	return &threadWatch{names: names, rescan: rescan, procs: map[string]*watchedProc{}, buf: make([]byte, 4096)}
}

// sample writes a threads line for each process watched, then the kernel
// stacks of their threads in D.
func (tw *threadWatch) sample(w *bufio.Writer, now time.Time) {
	if now.Sub(tw.scanned) >= tw.rescan {
		tw.scanned = now
		tw.scan()
	}
	var stacks []string
	pids := make([]string, 0, len(tw.procs))
	for pid := range tw.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		p := tw.procs[pid]
		tids, err := readNames("/proc/" + pid + "/task")
		if err != nil { // ended
			p.close()
			delete(tw.procs, pid)
			continue
		}
		fmt.Fprintf(w, "%d,threads,%s,%s", now.UnixMilli(), pid, p.comm)
		for _, tid := range tids {
			t := p.thread(pid, tid)
			if t == nil {
				continue // ended meanwhile
			}
			t.seen = true
			state, nice, ok := threadState(tw.pread(t.stat))
			sched := strings.Fields(tw.pread(t.sched))
			if !ok || len(sched) < 2 {
				continue
			}
			fmt.Fprintf(w, ",%s:%s:%s:%s:%s", tid, state, nice, sched[0], sched[1])
			if state == "D" {
				stacks = append(stacks, pid+","+tid+","+frames(read("/proc/"+pid+"/task/"+tid+"/stack")))
			}
		}
		fmt.Fprintln(w)
		p.forgetUnseen()
	}
	for _, s := range stacks {
		fmt.Fprintf(w, "%d,stack,%s\n", now.UnixMilli(), s)
	}
}

// scan finds the processes named: it starts watching new ones and stops
// watching those whose pid now names another program.
func (tw *threadWatch) scan() {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, path := range procs {
		pid := filepath.Base(path)
		comm := strings.TrimSpace(read(path + "/comm"))
		if p, watched := tw.procs[pid]; watched {
			if p.comm == comm {
				continue
			}
			p.close()
			delete(tw.procs, pid)
		}
		if tw.names[comm] {
			tw.procs[pid] = &watchedProc{comm: comm, threads: map[string]*watchedThread{}}
		}
	}
}

// pread reads an open /proc file from its start, "" when it cannot (its
// thread ended).
func (tw *threadWatch) pread(f *os.File) string {
	n, err := syscall.Pread(int(f.Fd()), tw.buf, 0)
	if err != nil || n <= 0 {
		return ""
	}
	return string(tw.buf[:n])
}

// thread returns tid's open files, opening them at its first sample; nil
// when the thread has ended.
func (p *watchedProc) thread(pid, tid string) *watchedThread {
	if t := p.threads[tid]; t != nil {
		return t
	}
	dir := "/proc/" + pid + "/task/" + tid
	stat, err := os.Open(dir + "/stat")
	if err != nil {
		return nil
	}
	sched, err := os.Open(dir + "/schedstat")
	if err != nil {
		stat.Close()
		return nil
	}
	t := &watchedThread{stat: stat, sched: sched}
	p.threads[tid] = t
	return t
}

// forgetUnseen closes the files of threads not listed at this sample
// (ended), and clears the mark of the others for the next.
func (p *watchedProc) forgetUnseen() {
	for tid, t := range p.threads {
		if !t.seen {
			t.close()
			delete(p.threads, tid)
		}
		t.seen = false
	}
}

func (p *watchedProc) close() {
	for _, t := range p.threads {
		t.close()
	}
}

func (t *watchedThread) close() {
	t.stat.Close()
	t.sched.Close()
}

// threadState is a thread's state and nice, from its stat line.
func threadState(stat string) (state, nice string, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 > len(stat) {
		return "", "", false
	}
	f := strings.Fields(stat[i+2:]) // from field 3, the state; nice is field 19
	if len(f) < 17 {
		return "", "", false
	}
	return f[0], f[16], true
}

// frames turns a kernel stack ("[<0>] name+0x1/0x2" lines) into its
// function names, innermost first, separated by semicolons.
func frames(stack string) string {
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(stack), "\n") {
		if _, fn, ok := strings.Cut(l, "] "); ok {
			fn, _, _ = strings.Cut(fn, "+")
			names = append(names, fn)
		}
	}
	return strings.Join(names, ";")
}

// readNames lists a directory's entries' names.
func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
