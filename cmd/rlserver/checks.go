package main

import (
	"flag"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// A node checks its clock against the others' and its disk by its logs'
// appends, and does not lead while either is wrong (cluster/clockcheck.go,
// cluster/fitness.go; docs/cluster.md, "What is guaranteed"). These are
// the bounds, and the faults the tests inject.

// checks are the bounds of the clock and disk checks, and the tests'
// faults.
type checks struct {
	// maxClockOffset is how far a node's clock may be from the others'
	// for it to lead.
	maxClockOffset time.Duration
	// slowLogWrite is how long an append to a log may take before it is
	// slow.
	slowLogWrite time.Duration
	// debugClockOffset starts the node with its clock that far off (with
	// --enable-debug-command only).
	debugClockOffset time.Duration
}

// addFlags declares the checks' settings on fs.
func (c *checks) addFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.maxClockOffset, "max-clock-offset", cluster.DefaultMaxClockOffset, "in a cluster, a node whose clock is further than this from the clocks of most of the others does not lead (it hands its leaderships over and stands in no election) until it is back within; 1ms to 1h")
	fs.DurationVar(&c.slowLogWrite, "slow-log-write", cluster.DefaultSlowLogWrite, "an append to a Raft log, fsync included, slower than this is slow: a leader whose appends to a shard's log are slow three in a row hands the shard to a node whose are not; 1ms to 1m")
	fs.DurationVar(&c.debugClockOffset, "debug-clock-offset", 0, "with --enable-debug-command: start with this node's clock this far off its host's, as DEBUG CLOCK OFFSET makes it (for tests of the clock check)")
}

// validateChecks checks the checks' settings.
func (o options) validateChecks() error {
	c := o.checks
	switch {
	case c.maxClockOffset < time.Millisecond || c.maxClockOffset > time.Hour:
		return invalid("max-clock-offset", "--max-clock-offset %v: must be from 1ms to 1h", c.maxClockOffset)
	case c.slowLogWrite < time.Millisecond || c.slowLogWrite > time.Minute:
		return invalid("slow-log-write", "--slow-log-write %v: must be from 1ms to 1m", c.slowLogWrite)
	case c.debugClockOffset != 0 && !o.debug:
		return invalid("debug-clock-offset", "--debug-clock-offset needs --enable-debug-command: it is for tests")
	case c.debugClockOffset < -24*time.Hour || c.debugClockOffset > 24*time.Hour:
		return invalid("debug-clock-offset", "--debug-clock-offset %v: must be within a day either way", c.debugClockOffset)
	}
	return nil
}

// debugFaults are the clock and the disk faults DEBUG moves, nil without
// --enable-debug-command (disk nil in memory too: no logs).
type debugFaults struct {
	clock *cluster.DebugClock
	disk  *persistence.DiskFaults
}

// newDebugFaults makes the faults o allows.
func newDebugFaults(o options) debugFaults {
	if !o.debug {
		return debugFaults{}
	}
	f := debugFaults{clock: new(cluster.DebugClock)}
	f.clock.SetOffset(o.checks.debugClockOffset.Milliseconds())
	if !o.inMemory {
		f.disk = new(persistence.DiskFaults)
	}
	return f
}
