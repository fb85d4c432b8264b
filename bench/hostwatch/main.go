//go:build linux

// Command hostwatch records what the host did while a benchmark ran, to
// tell a server's own stall from the machine's: which processes had the
// CPUs, which threads waited to run, which waited in the kernel (and on
// what), and whether the disk completed its writes. It samples /proc and
// /sys, so it needs no change to the processes watched; reading other
// processes' kernel stacks needs root (without it, none are written).
//
//	hostwatch -out host.csv -comms rlserver,snapload &   # then the benchmark; kill it after
//
// It writes one CSV line per record, the first field the time in Unix ms
// and the second the record's kind:
//
//	gap,MS                 its own 1 ms sleep took MS (over -gap): the host itself stalled
//	host,cpu,…,psi,…,vm,…,disk,…   every -host: /proc/stat's cpu line (user nice system idle
//	                       iowait irq softirq steal, in ticks), /proc/pressure's totals (µs:
//	                       cpu some, full; io some, full; memory some, full), vmstat counters
//	                       (vmKeys) and the disk's /sys/block/DISK/stat fields
//	threads,PID,COMM,TID:STATE:NICE:RUN_NS:WAIT_NS,…   every -threads, for each process
//	                       named in -comms: each thread's state (R running or runnable, S
//	                       sleeping, D waiting in the kernel uninterruptibly), nice, and its
//	                       schedstat (time run, time waited to run); a process started
//	                       meanwhile is found within -rescan (a second)
//	stack,PID,TID,FRAME;FRAME;…   the kernel stack of each thread found in D
//
// docs/performance.md ("What the spells are") reads these to split a
// benchmark's slow moments between the CPUs and the disk.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// vmKeys are the /proc/vmstat counters a host line carries: faults, the
// reclaim a process may wait for, and the dirty and written-back pages.
var vmKeys = []string{"pgfault", "pgmajfault", "allocstall_normal", "allocstall_movable", "pgscan_direct",
	"pgscan_kswapd", "nr_dirty", "nr_writeback", "compact_stall", "nr_free_pages"}

func main() {
	out := flag.String("out", "hostwatch.csv", "the file to write")
	comms := flag.String("comms", "rlserver", "the processes whose threads to sample, by name (comm), comma-separated")
	threadsEvery := flag.Duration("threads", 10*time.Millisecond, "how often to sample the threads")
	hostEvery := flag.Duration("host", 100*time.Millisecond, "how often to sample the host")
	gap := flag.Duration("gap", 5*time.Millisecond, "report a 1 ms sleep that took longer than this")
	rescan := flag.Duration("rescan", time.Second, "how often to look for new processes named in -comms")
	disk := flag.String("disk", "vda", "the block device whose stat to sample (/sys/block/DISK/stat)")
	flag.Parse()
	if *threadsEvery <= 0 || *hostEvery <= 0 || *gap <= 0 || *rescan <= 0 {
		fmt.Fprintln(os.Stderr, "hostwatch: -threads, -host, -gap and -rescan must be positive")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostwatch:", err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	names := map[string]bool{}
	for _, c := range strings.Split(*comms, ",") {
		names[c] = true
	}
	threads := newThreadWatch(names, *rescan)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var lastThreads, lastHost time.Time
	last := time.Now()
	for {
		select {
		case <-stop:
			err := w.Flush()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "hostwatch:", err)
				os.Exit(1)
			}
			return
		default:
		}
		time.Sleep(time.Millisecond)
		now := time.Now()
		if d := now.Sub(last); d > *gap {
			fmt.Fprintf(w, "%d,gap,%.1f\n", now.UnixMilli(), float64(d.Microseconds())/1000)
		}
		last = now
		if now.Sub(lastThreads) >= *threadsEvery {
			lastThreads = now
			threads.sample(w, now)
		}
		if now.Sub(lastHost) >= *hostEvery {
			lastHost = now
			fmt.Fprintf(w, "%d,host,cpu,%s,psi,%s,%s,%s,vm,%s,disk,%s\n", now.UnixMilli(), cpuLine(),
				pressure("cpu"), pressure("io"), pressure("memory"), vmstat(),
				strings.Join(strings.Fields(read("/sys/block/"+*disk+"/stat")), ","))
			w.Flush()
		}
	}
}

// cpuLine is /proc/stat's first eight cpu fields, comma-separated.
func cpuLine() string {
	first, _, _ := strings.Cut(read("/proc/stat"), "\n")
	f := strings.Fields(first)
	if len(f) < 9 {
		return strings.Repeat(",", 7)
	}
	return strings.Join(f[1:9], ",")
}

// pressure is /proc/pressure/RESOURCE's some and full totals (µs).
func pressure(resource string) string {
	totals := []string{"0", "0"}
	for i, l := range strings.SplitN(read("/proc/pressure/"+resource), "\n", 2) {
		if _, t, ok := strings.Cut(l, "total="); ok {
			totals[i] = strings.TrimSpace(t)
		}
	}
	return strings.Join(totals, ",")
}

// vmstat is the vmKeys counters of /proc/vmstat, comma-separated.
func vmstat() string {
	have := map[string]string{}
	for _, l := range strings.Split(read("/proc/vmstat"), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			have[k] = v
		}
	}
	vals := make([]string, len(vmKeys))
	for i, k := range vmKeys {
		vals[i] = have[k]
	}
	return strings.Join(vals, ",")
}

// read returns a file's content, or "" when it cannot be read (a process
// or thread that ended, a file this kernel lacks).
func read(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
