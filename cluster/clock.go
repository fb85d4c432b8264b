package cluster

import (
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Clock is the time a shard's leader stamps on each batch, and the host's
// wall clock the node compares with the others' (clockcheck.go).
type Clock interface {
	// Now and NowMicro are the time a leader stamps on a batch, in Unix
	// ms and µs.
	Now() int64
	NowMicro() int64
	// Wall is this host's wall clock, in Unix ms, as the other nodes'
	// clocks are compared with it. For the system clock it is Now; a
	// DebugClock's Now may be fixed by a test while its Wall runs on.
	Wall() int64
}

// SystemClock reads the system's wall clock.
type SystemClock struct{}

// Now returns the current Unix time in milliseconds.
func (SystemClock) Now() int64 { return time.Now().UnixMilli() }

// NowMicro returns the current Unix time in microseconds.
func (SystemClock) NowMicro() int64 { return time.Now().UnixMicro() }

// Wall returns the current Unix time in milliseconds.
func (SystemClock) Wall() int64 { return time.Now().UnixMilli() }

// DebugClock is a clock tests can stop and move (DEBUG CLOCK). It keeps two
// things apart. The test's time: the system clock, moved by Advance, or an
// instant Set fixes it at, which a test sets alike on every node to replay
// a scenario; the clock check does not look at it. And the host's error:
// an offset (SetOffset, --debug-clock-offset) by which this node's clock
// is off, as a badly synchronised host's would be, added to both Now and
// Wall, which the clock check compares with the other nodes'.
type DebugClock struct {
	fixed  atomic.Bool
	at     atomic.Int64 // the fixed instant, when fixed
	shift  atomic.Int64 // added to the system clock, when not fixed (Advance)
	offset atomic.Int64 // this host's error, added to every reading
}

// Now returns the test's time plus the host's offset.
func (c *DebugClock) Now() int64 { return c.Test() + c.offset.Load() }

// NowMicro returns Now in microseconds: the fixed instant's first, or the
// system time moved by Advance; plus the host's offset.
func (c *DebugClock) NowMicro() int64 {
	us := time.Now().UnixMicro() + c.shift.Load()*1000
	if c.fixed.Load() {
		us = c.at.Load() * 1000
	}
	return us + c.offset.Load()*1000
}

// Test returns the test's time: the fixed instant, or the system time
// moved by Advance.
func (c *DebugClock) Test() int64 {
	if c.fixed.Load() {
		return c.at.Load()
	}
	return time.Now().UnixMilli() + c.shift.Load()
}

// Wall returns the system time plus the host's offset.
func (c *DebugClock) Wall() int64 { return time.Now().UnixMilli() + c.offset.Load() }

// Set fixes the test's time at ms.
func (c *DebugClock) Set(ms int64) {
	c.at.Store(ms)
	c.fixed.Store(true)
}

// Advance moves the test's time forward by ms (backward when negative) and
// returns the new Now.
func (c *DebugClock) Advance(ms int64) int64 {
	if c.fixed.Load() {
		c.at.Add(ms)
	} else {
		c.shift.Add(ms)
	}
	return c.Now()
}

// Real returns the test's time to the system clock; the host's offset
// stays.
func (c *DebugClock) Real() {
	c.shift.Store(0)
	c.fixed.Store(false)
}

// SetOffset makes this host's clock off by ms from now on (0: right), as
// a clock that jumps would: Now and Wall both move by the change.
func (c *DebugClock) SetOffset(ms int64) { c.offset.Store(ms) }

// Offset returns the host's offset, in ms.
func (c *DebugClock) Offset() int64 { return c.offset.Load() }

// stamper stamps a shard's batches: the clock's microseconds, but past the
// scripts of the batch before within the clock's millisecond. A batch's
// k-th script sees its stamp plus k-1 (engine.Shard.ApplyMicros), so
// successive scripts see TIME move, as they do in Redis, even when the
// clock has not; the millisecond, which decisions use, is the clock's.
type stamper struct {
	next int64 // the first microsecond after the last batch's scripts, at most its millisecond's end
}

// stamp returns the time of a batch with scripts scripts, the clock
// reading us: us, or, while the clock is in the millisecond of the last
// batch's scripts, the microsecond after them (at most the millisecond's
// last, as the engine never takes a script past it).
func (s *stamper) stamp(us, scripts int64) int64 {
	t := us
	if ms := us - us%1000; s.next > us && s.next <= ms+1000 {
		t = min(s.next, ms+999)
	}
	s.next = min(t+scripts, t-t%1000+1000)
	return t
}

// scriptsIn counts the scripts among cmds.
func scriptsIn(cmds []engine.Command) int64 {
	n := int64(0)
	for i := range cmds {
		if cmds[i].Op == engine.OpEval {
			n++
		}
	}
	return n
}
