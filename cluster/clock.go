package cluster

import (
	"sync/atomic"
	"time"
)

// Clock is the time a shard's leader stamps on each batch, in Unix ms.
type Clock interface {
	Now() int64
}

// SystemClock reads the system's wall clock.
type SystemClock struct{}

// Now returns the current Unix time in milliseconds.
func (SystemClock) Now() int64 { return time.Now().UnixMilli() }

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
