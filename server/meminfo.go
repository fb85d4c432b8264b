package server

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// memoryFigures are the process's memory as INFO memory reports it: what
// the machine pays (the resident set, on which a container's limit is set)
// and how the Go runtime's heap divides it, so that an operator can tell the
// keys from the collector's headroom and from memory kept but free.
type memoryFigures struct {
	rss       uint64 // resident set: VmRSS (the runtime's own estimate where /proc is missing)
	heapInUse uint64 // bytes of live objects and garbage not yet collected (used_memory)
	heapLive  uint64 // bytes live as of the latest collection
	heapGoal  uint64 // the heap size at which the next collection ends
	heapFree  uint64 // heap the runtime holds free, still resident
	released  uint64 // heap returned to the system, not resident
	runtime   uint64 // everything the runtime maps: heap, stacks, its own structures
	gcPercent uint64 // the collector's GOGC as now set
	gcLimit   uint64 // the collector's memory limit (math.MaxInt64: none)
	gcCycles  uint64 // collections so far
}

// memorySamples are the runtime metrics the figures come from, in the order
// readMemoryFigures reads them.
var memorySamples = []string{
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/total:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/gc/cycles/total:gc-cycles",
}

// readMemoryFigures reads the figures now. It is for INFO and MEMORY STATS,
// not for a command's path: it reads a file.
func readMemoryFigures() memoryFigures {
	s := make([]metrics.Sample, len(memorySamples))
	for i, name := range memorySamples {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	f := memoryFigures{
		heapInUse: v(0), heapLive: v(1), heapGoal: v(2), heapFree: v(3), released: v(4),
		runtime: v(5), gcPercent: v(6), gcLimit: v(7), gcCycles: v(8),
	}
	f.rss = residentBytes()
	if f.rss == 0 {
		f.rss = f.runtime - f.released
	}
	return f
}

// residentBytes is the process's resident set from /proc/self/statm (its
// second field, in pages), or 0 where there is none.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
