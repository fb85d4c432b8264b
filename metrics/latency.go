package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/server"
)

// latencyBounds are the upper bounds of the latency histogram's buckets:
// from a fraction of a millisecond (in memory, pipelined) to seconds (a
// request that waited for an election).
var latencyBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second,
}

// classes are the server's command classes, indexed by their value.
var classes = []server.CommandClass{server.ClassKeyed, server.ClassServer}

// Latency is the server's Observer: a histogram of how long commands take
// to answer, one per command class. The server reports a whole pipeline at
// once (n commands, each of which took d), and a Prometheus histogram can
// only count one observation at a time, so Latency keeps its own buckets
// and counts n in one: two atomic adds and a compare-and-swap per
// pipeline and class, whatever the pipeline's length.
type Latency struct {
	desc    *prometheus.Desc
	classes [2]weightedHistogram
}

// weightedHistogram counts observations of a weight each.
type weightedHistogram struct {
	buckets [len(latencyBounds) + 1]atomic.Uint64 // by latencyBounds, then +Inf; not cumulative
	sumBits atomic.Uint64                         // float64 seconds: a float does not wrap
}

// NewLatency returns an empty Latency.
func NewLatency() *Latency {
	return &Latency{desc: prometheus.NewDesc("rlserver_command_duration_seconds",
		"Time from reading a command to having its reply ready, by class: keyed (sent to the shards: "+
			"decisions and key commands, the Raft commit included when durable) or server (answered by the "+
			"server, or refused). Each command of a pipeline takes the whole pipeline's time.",
		[]string{"class"}, nil)}
}

// Answered counts n commands of class answered in d. It implements
// server.Observer.
func (l *Latency) Answered(class server.CommandClass, n int64, d time.Duration) {
	if int(class) >= len(l.classes) || n <= 0 {
		return
	}
	h := &l.classes[class]
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.buckets[i].Add(uint64(n))
	add := float64(n) * d.Seconds()
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+add)) {
			return
		}
	}
}

// Describe implements prometheus.Collector.
func (l *Latency) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

// Collect implements prometheus.Collector.
func (l *Latency) Collect(ch chan<- prometheus.Metric) {
	for _, class := range classes {
		h := &l.classes[class]
		cumulative := make(map[float64]uint64, len(latencyBounds))
		var count uint64
		for i, bound := range latencyBounds {
			count += h.buckets[i].Load()
			cumulative[bound.Seconds()] = count
		}
		count += h.buckets[len(latencyBounds)].Load()
		sum := math.Float64frombits(h.sumBits.Load())
		ch <- prometheus.MustNewConstHistogram(l.desc, count, sum, cumulative, class.String())
	}
}
