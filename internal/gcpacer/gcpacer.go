// Package gcpacer sets the pace of Go's garbage collector for a server whose
// memory is mostly a keyspace the collector need not scan.
//
// Left alone (GOGC=100), the collector lets the heap grow to twice what was
// live at the end of the previous collection before it collects again. That
// headroom is what keeps collections rare: a collection costs the work of
// scanning the heap's pointers, so a heap twice as large may take half as
// many. But rlserver's keys live in chunks without pointers (engine's
// records and index), which the collector marks with one look each and never
// scans: they add to the heap and almost nothing to a collection's work
// (docs/performance.md, "Where the memory goes"). Doubling them buys
// nothing, and the machine pays the headroom in resident memory all the
// same.
//
// So after every collection the pacer sets GOGC so that the next one comes
// after the heap grows by what the collector must scan (heap, stacks and
// globals), not by the whole heap: the collector does the work per byte
// allocated it would do for the same server without its keys. The growth
// has two floors. MinHeadroom, so that a small heap is not collected every
// few megabytes. And what the server allocated in the last interval (up to
// MaxRateHeadroom), so that a server that allocates fast (the gRPC front
// allocates a few kilobytes a call, where the Redis protocol allocates
// nothing) is collected a few times a second rather than dozens: every
// collection costs a fixed share besides its marking, and shrinks the
// stacks of idle goroutines that the next calls grow again. And when the
// server has been idle for a moment with memory held beyond what is live
// (garbage from a burst of work, a snapshot's buffer released), it collects
// and returns the free pages to the system, which the runtime would
// otherwise keep until it next needs them.
//
// One allocation is known ahead: while a shard's snapshot is taken, every
// chunk of keys the shard first writes is copied (engine's Capture), and
// the copies stay live until the snapshot is written. Seconds of copies at
// tens of millions of keys are gigabytes that no collection can free, yet
// paced as above the collector ran for every few dozen megabytes of them,
// back to back. So the heap may also grow by what the server says it has
// reserved (Config.Reserved: the bound on a snapshot's copies), and the
// pace is set again as soon as that changes, not at the next collection.
package gcpacer

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Config says how the pacer runs. The zero value of a field takes its
// default.
type Config struct {
	// MinHeadroom is the least the heap may grow by between two
	// collections (default 8 MiB, twice Go's own minimum heap).
	MinHeadroom uint64
	// MaxRateHeadroom bounds the other floor: the heap may grow between
	// two collections by what was allocated in the last interval, up to
	// this (default 64 MiB).
	MaxRateHeadroom uint64
	// Interval is how often the pacer reads the runtime's figures (default
	// 250 ms).
	Interval time.Duration
	// IdleAlloc is what the server may allocate in an interval and still
	// count as idle (default 256 KiB).
	IdleAlloc uint64
	// MinReturn is the least memory held beyond the live heap that is worth
	// a collection to return, when idle (default 4 MiB; at least a 64th of
	// the live heap).
	MinReturn uint64
	// Percent leaves GOGC as it is when false (the operator set GOGC) and
	// only returns memory when idle.
	Percent bool
	// Reserved, when set, says how much memory the server may allocate
	// soon and keep live for a while (cluster.CaptureCopyBound): the heap
	// may grow by that much more before the next collection.
	Reserved func() uint64
}

// Defaults.
const (
	defaultMinHeadroom     = 8 << 20
	defaultMaxRateHeadroom = 64 << 20
	defaultInterval        = 250 * time.Millisecond
	defaultIdleAlloc       = 256 << 10
	defaultMinReturn       = 4 << 20
)

// idleIntervals is how many intervals in a row the server must be idle
// before memory is returned: one quiet interval could be a pause between
// two pipelines.
const idleIntervals = 2

// minPercent and maxPercent bound the GOGC the pacer sets from what is
// scanned: never more headroom than Go's default, and never so little that
// a heap of mostly keys is collected for every few kilobytes. The floors
// may take it above maxPercent for a small heap, up to ceilPercent.
const (
	minPercent  = 2
	maxPercent  = 100
	ceilPercent = 100_000
)

// reading is what the pacer reads from the runtime at each interval.
type reading struct {
	Cycles    uint64 // collections so far
	Allocated uint64 // bytes allocated on the heap so far
	Live      uint64 // heap live at the end of the latest collection
	Scan      uint64 // what a collection must scan: heap, stacks and globals (as allocated since)
	Held      uint64 // heap held and resident: objects, garbage and free pages not returned
	Reserved  uint64 // Config.Reserved's
}

// action is what the pacer decides at an interval.
type action struct {
	Percent int  // GOGC to set; 0: leave it
	Return  bool // collect now and return free memory to the system
}

// pacer decides from successive readings. It keeps what it needs of the
// previous one; Step is its only method that changes it.
type pacer struct {
	cfg       Config
	allocated uint64 // reading.Allocated at the previous step
	cycles    uint64 // reading.Cycles at the previous step
	idle      int    // steps in a row that allocated at most IdleAlloc
	percent   int    // GOGC as last set
	reserved  uint64 // reading.Reserved at the previous step
	started   bool
}

// New returns a pacer with cfg's defaults filled in.
func newPacer(cfg Config) *pacer {
	if cfg.MinHeadroom == 0 {
		cfg.MinHeadroom = defaultMinHeadroom
	}
	if cfg.MaxRateHeadroom == 0 {
		cfg.MaxRateHeadroom = defaultMaxRateHeadroom
	}
	if cfg.Interval == 0 {
		cfg.Interval = defaultInterval
	}
	if cfg.IdleAlloc == 0 {
		cfg.IdleAlloc = defaultIdleAlloc
	}
	if cfg.MinReturn == 0 {
		cfg.MinReturn = defaultMinReturn
	}
	return &pacer{cfg: cfg, percent: maxPercent}
}

// Step takes the reading of this interval and says what to do.
func (p *pacer) Step(r reading) action {
	var a action
	// Live is as of the latest collection: the percent is set again after
	// each one (and at the first reading), and when the reserve changes.
	if p.cfg.Percent && (!p.started || r.Cycles != p.cycles || r.Reserved != p.reserved) {
		floor := p.cfg.MinHeadroom
		if p.started {
			floor = max(floor, min(r.Allocated-p.allocated, p.cfg.MaxRateHeadroom))
		}
		if pct := percentFor(r.Live, r.Scan, floor, r.Reserved); pct != p.percent {
			p.percent, a.Percent = pct, pct
		}
	}
	// The first reading only sets the baseline: what came before is unknown.
	if !p.started {
		p.started = true
	} else if r.Allocated-p.allocated <= p.cfg.IdleAlloc {
		p.idle++
	} else {
		p.idle = 0
	}
	p.allocated, p.cycles, p.reserved = r.Allocated, r.Cycles, r.Reserved
	held := r.Held - min(r.Held, r.Live)
	if p.idle >= idleIntervals && held > max(p.cfg.MinReturn, r.Live/64) {
		a.Return = true
		p.idle = 0
	}
	return a
}

// percentFor is the GOGC that lets a heap of live bytes grow, before the
// next collection, by what the collector must scan (scan bytes) but not by
// more than the live heap (Go's default), and by at least floor; and by
// the reserved bytes besides.
func percentFor(live, scan, floor, reserved uint64) int {
	if live == 0 {
		return maxPercent
	}
	pct := min(scan, live) * 100 / live
	pct = max(pct, (floor*100+live-1)/live) // rounded up: at least floor
	pct = max(pct, minPercent) + (reserved*100+live-1)/live
	return int(min(pct, ceilPercent))
}

// samples are the runtime metrics a reading comes from.
var samples = []string{
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/allocs:bytes",
	"/gc/heap/live:bytes",
	"/gc/scan/heap:bytes",
	"/gc/scan/stack:bytes",
	"/gc/scan/globals:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
}

// read reads the runtime's figures into a reading.
func read(s []metrics.Sample) reading {
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return reading{Cycles: v(0), Allocated: v(1), Live: v(2), Scan: v(3) + v(4) + v(5), Held: v(6) + v(7)}
}

// Run paces the collector until stop is closed. It is the process's one
// caller of debug.SetGCPercent.
func Run(cfg Config, stop <-chan struct{}) {
	p := newPacer(cfg)
	s := make([]metrics.Sample, len(samples))
	for i, name := range samples {
		s[i].Name = name
	}
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r := read(s)
		if cfg.Reserved != nil {
			r.Reserved = cfg.Reserved()
		}
		a := p.Step(r)
		if a.Percent != 0 {
			debug.SetGCPercent(a.Percent)
		}
		if a.Return {
			debug.FreeOSMemory()
		}
	}
}
