package cluster

import (
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Clock is the time a shard's leader stamps on each batch.
type Clock interface {
	Now() int64      // Unix ms
	NowMicro() int64 // Unix µs
}

// SystemClock reads the system's wall clock.
type SystemClock struct{}

// Now returns the current Unix time in milliseconds.
func (SystemClock) Now() int64 { return time.Now().UnixMilli() }

// NowMicro returns the current Unix time in microseconds.
func (SystemClock) NowMicro() int64 { return time.Now().UnixMicro() }

// DebugClock is a clock tests can stop and move (DEBUG CLOCK): it reads the
// system clock plus an offset until Set fixes it at an instant.
type DebugClock struct {
	fixed  atomic.Bool
	at     atomic.Int64 // the fixed instant, when fixed
	offset atomic.Int64 // added to the system clock, when not fixed
}

// Now returns the fixed instant, or the system time plus the offset.
func (c *DebugClock) Now() int64 {
	if c.fixed.Load() {
		return c.at.Load()
	}
	return time.Now().UnixMilli() + c.offset.Load()
}

// NowMicro returns Now in microseconds: the fixed instant's first, or the
// system time plus the offset.
func (c *DebugClock) NowMicro() int64 {
	if c.fixed.Load() {
		return c.at.Load() * 1000
	}
	return time.Now().UnixMicro() + c.offset.Load()*1000
}

// Set fixes the clock at ms.
func (c *DebugClock) Set(ms int64) {
	c.at.Store(ms)
	c.fixed.Store(true)
}

// Advance moves the clock forward by ms (backward when negative) and returns
// the new time.
func (c *DebugClock) Advance(ms int64) int64 {
	if c.fixed.Load() {
		return c.at.Add(ms)
	}
	c.offset.Add(ms)
	return c.Now()
}

// Real returns the clock to the system clock, without offset.
func (c *DebugClock) Real() {
	c.offset.Store(0)
	c.fixed.Store(false)
}

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
