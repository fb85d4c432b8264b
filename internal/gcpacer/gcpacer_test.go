package gcpacer

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

const mib = 1 << 20

// sink keeps the compiler from leaving out the test's allocations.
var sink []byte

func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		name                              string
		live, scan, minHeadroom, reserved uint64
		want                              int
	}{
		{"nothing live yet", 0, 0, 8 * mib, 0, 100},
		{"a small heap grows by the floor", 4 * mib, 2 * mib, 8 * mib, 0, 200},
		{"a tiny heap under a fast allocator", 1 * mib, 1 * mib, 64 * mib, 0, 6400},
		{"a floor that does not divide the heap is rounded up", 3 * mib, 1 * mib, 8 * mib, 0, 267},
		{"a heap all pointers keeps Go's default", 100 * mib, 100 * mib, 8 * mib, 0, 100},
		{"the minimum headroom over a keyspace", 400 * mib, 1 * mib, 8 * mib, 0, 2},
		{"headroom for what is scanned", 200 * mib, 50 * mib, 8 * mib, 0, 25},
		{"never below the floor", 10_000 * mib, 1 * mib, 8 * mib, 0, 2},
		{"a snapshot's copies besides the minimum", 2000 * mib, 1 * mib, 8 * mib, 1200 * mib, 62},
		{"a snapshot's copies besides the scanned headroom", 200 * mib, 50 * mib, 8 * mib, 100 * mib, 75},
		{"a reserve beside an empty heap", 0, 0, 8 * mib, 100 * mib, 100},
	} {
		if got := percentFor(c.live, c.scan, c.minHeadroom, c.reserved); got != c.want {
			t.Errorf("%s: percentFor(%d MiB, %d MiB, %d MiB) = %d, want %d", c.name, c.live/mib, c.scan/mib, c.reserved/mib, got, c.want)
		}
	}
}

// A pacer fed a sequence of readings: GOGC follows what is scanned, and
// memory is returned only after two quiet intervals with enough held
// beyond the live heap, once.
func TestStep(t *testing.T) {
	type step struct {
		r    reading
		want action
	}
	// Each reading with another live heap follows a collection.
	cycles, lastLive := uint64(0), uint64(0)
	busy := func(alloc, live, scan, held uint64) reading {
		if live != lastLive {
			cycles, lastLive = cycles+1, live
		}
		return reading{Cycles: cycles, Allocated: alloc, Live: live, Scan: scan, Held: held}
	}
	reserve := func(r reading, reserved uint64) reading {
		r.Reserved = reserved
		return r
	}
	for _, c := range []struct {
		name    string
		percent bool
		steps   []step
	}{
		{"a growing keyspace", true, []step{
			{busy(0, 4*mib, 2*mib, 6*mib), action{Percent: 200}}, // the 8 MiB floor
			{busy(8*mib, 200*mib, 20*mib, 300*mib), action{Percent: 10}},
			{busy(16*mib, 200*mib, 40*mib, 380*mib), action{}}, // no collection since: as set
			{busy(24*mib, 400*mib, 20*mib, 420*mib), action{Percent: 5}},
		}},
		{"a fast allocator is collected once an interval's allocation", true, []step{
			{busy(0, 4*mib, 4*mib, 8*mib), action{Percent: 200}}, // no rate known yet
			{busy(20*mib, 5*mib, 4*mib, 20*mib), action{Percent: 400}},
			{busy(40*mib, 4*mib, 4*mib, 20*mib), action{Percent: 500}},
			{busy(1040*mib, 100*mib, 100*mib, 200*mib), action{Percent: 100}}, // scanned: Go's default
			{busy(2040*mib, 200*mib, 10*mib, 300*mib), action{Percent: 32}},   // 64 MiB at most
			{busy(2042*mib, 400*mib, 10*mib, 300*mib), action{Percent: 2}},    // quiet again: 10 MiB scanned, at least 2%
		}},
		{"idle after a burst returns memory once", true, []step{
			{busy(0, 100*mib, 100*mib, 190*mib), action{}},
			{busy(100*mib, 100*mib, 100*mib, 190*mib), action{}},
			{busy(100*mib, 100*mib, 100*mib, 190*mib), action{}}, // one quiet interval
			{busy(100*mib, 100*mib, 100*mib, 190*mib), action{Return: true}},
			{busy(100*mib, 100*mib, 100*mib, 100*mib), action{}},
			{busy(100*mib, 100*mib, 100*mib, 100*mib), action{}},
			{busy(100*mib, 100*mib, 100*mib, 100*mib), action{}}, // nothing held beyond live
		}},
		{"a busy server keeps its memory", true, []step{
			{busy(0, 100*mib, 100*mib, 190*mib), action{}},
			{busy(10*mib, 100*mib, 100*mib, 190*mib), action{}},
			{busy(20*mib, 100*mib, 100*mib, 190*mib), action{}},
			{busy(30*mib, 100*mib, 100*mib, 190*mib), action{}},
		}},
		{"a little held is not worth a collection", true, []step{
			{busy(0, 600*mib, 600*mib, 606*mib), action{}},
			{busy(0, 600*mib, 600*mib, 606*mib), action{}},
			{busy(0, 600*mib, 600*mib, 606*mib), action{}}, // 6 MiB < 600/64
		}},
		{"a snapshot's copies: the pace is set at once when it starts and ends", true, []step{
			{busy(0, 2000*mib, 1*mib, 2100*mib), action{Percent: 2}},
			{reserve(busy(10*mib, 2000*mib, 1*mib, 2100*mib), 1000*mib), action{Percent: 52}}, // no collection since
			{reserve(busy(20*mib, 2000*mib, 1*mib, 2100*mib), 1000*mib), action{}},
			{reserve(busy(30*mib, 2400*mib, 1*mib, 2500*mib), 1000*mib), action{Percent: 44}}, // a collection: the copies are live
			{busy(40*mib, 2400*mib, 1*mib, 2500*mib), action{Percent: 2}},                     // ended: collect what it left
		}},
		{"GOGC set by the operator", false, []step{
			{busy(0, 400*mib, 1*mib, 450*mib), action{}},
			{busy(0, 400*mib, 1*mib, 450*mib), action{}},
			{busy(0, 400*mib, 1*mib, 450*mib), action{Return: true}},
		}},
	} {
		p := newPacer(Config{Percent: c.percent})
		for i, s := range c.steps {
			if got := p.Step(s.r); got != s.want {
				t.Fatalf("%s, step %d: %+v, want %+v", c.name, i, got, s.want)
			}
		}
	}
}

// Run against the real runtime: garbage left by a burst of work is collected
// and its memory returned to the system while the process is idle. The
// collector is off (GOGC=off, which the pacer then leaves alone), so that
// only the pacer can collect it.
func TestRunReturnsIdleMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for range 64 {
		sink = make([]byte, 1<<20) // garbage as soon as the next replaces it
	}
	sink = nil
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(Config{Interval: 10 * time.Millisecond}, stop)
	}()
	defer func() { close(stop); <-done }()
	err := poll.Wait(10*time.Second, "an idle collection that returns memory", func() (bool, error) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.NumForcedGC > before.NumForcedGC && m.HeapInuse+32<<20 < before.HeapInuse, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
