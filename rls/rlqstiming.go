package rls

import (
	"time"

	"github.com/rlserver/rlserver/engine"
)

// A stream's timing follows its Envoy's report interval, which the
// service measures rather than trusts: Envoy's filter reports every 5 s
// whatever its reporting_interval says, and a report's time_elapsed is in
// whole seconds (0 in a bucket's first report). From the interval I:
//
//	TTL sent to Envoy      ⌈2.1 × I⌉ in whole seconds: one lost report does not expire it
//	RL.SHARE's TTL         that + reservationGrace: the grant outlives its use at the Envoy,
//	                       which counts the TTL from when the assignment reaches it
//	refresh                I/5, from 100 ms to 1 s: every bucket's grant is asked for again,
//	                       and sent when it changed, so that shares follow demand between reports
//	ack delay              a refresh: a grant sent that long ago is taken to be the one the
//	                       Envoy uses, and frees its older grants (RL.SHARE's ACK) at the
//	                       next refresh; an Envoy applies an assignment as it arrives

// Bounds of the measured report interval, and its value before a stream
// has shown its own (Envoy's).
const (
	defaultReportInterval = 5 * time.Second
	minReportInterval     = time.Second
	maxReportInterval     = 5 * time.Minute
	// reservationGrace is how much longer RL.SHARE holds a grant than
	// the Envoy it is sent to uses it: the time an assignment takes to
	// reach it, with room to spare.
	reservationGrace = time.Second
	minRefresh       = 100 * time.Millisecond
	maxRefresh       = time.Second
)

// cadence estimates a stream's report interval: the longest of the last
// gaps between its regular reports (those with a time_elapsed), so that a
// report sent early (a new bucket's, at once) does not shorten it.
type cadence struct {
	last time.Time
	gaps [3]time.Duration
	n    int
}

// observe notes a regular report at now.
func (c *cadence) observe(now time.Time) {
	if !c.last.IsZero() {
		c.gaps[c.n%len(c.gaps)] = now.Sub(c.last)
		c.n++
	}
	c.last = now
}

// interval is the estimated report interval.
func (c *cadence) interval() time.Duration {
	if c.n == 0 {
		return defaultReportInterval
	}
	var i time.Duration
	for _, g := range c.gaps {
		i = max(i, g)
	}
	return min(max(i, minReportInterval), maxReportInterval)
}

// envoyTTL is the assignment_time_to_live sent: 2.1 intervals, in whole
// seconds (Envoy counts whole seconds).
func (c *cadence) envoyTTL() time.Duration {
	i := c.interval()
	return (2*i + i/10 + time.Second - 1).Truncate(time.Second)
}

// shareTTL is RL.SHARE's TTL in ms.
func (c *cadence) shareTTL() int64 {
	return min((c.envoyTTL() + reservationGrace).Milliseconds(), engine.MaxShareTTL)
}

// refresh is how often the stream asks for its buckets' grants again.
func (c *cadence) refresh() time.Duration {
	return min(max(c.interval()/5, minRefresh), maxRefresh)
}

// ackDelay is how long after a grant is sent the Envoy is taken to use it.
func (c *cadence) ackDelay() time.Duration { return c.refresh() }
