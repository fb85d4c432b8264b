package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/httpapi"
)

// HTTP is the decision API over HTTP (httpapi.Server): its requests by
// endpoint and status, and their durations. Its decisions are the shards',
// counted in rlserver_decisions_total with the Redis protocol's.
type HTTP interface {
	Stats() [len(httpapi.Endpoints)]httpapi.Stats
}

// httpCollector exports the HTTP API's counters.
type httpCollector struct {
	src      HTTP
	requests *prometheus.Desc
	duration *prometheus.Desc
}

func newHTTPCollector(src HTTP) *httpCollector {
	return &httpCollector{
		src: src,
		requests: prometheus.NewDesc("rlserver_http_requests_total",
			"Requests the HTTP API (--http-port) answered, by endpoint and status; a decision, allowed or refused, is a 200.",
			[]string{"endpoint", "code"}, nil),
		duration: prometheus.NewDesc("rlserver_http_request_duration_seconds",
			"Time from a request's headers to its answer, by endpoint: the body read, the decision (the Raft commit included when durable), the reply.",
			[]string{"endpoint"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *httpCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.duration
}

// Collect implements prometheus.Collector.
func (c *httpCollector) Collect(ch chan<- prometheus.Metric) {
	for e, st := range c.src.Stats() {
		endpoint := httpapi.Endpoints[e]
		for j, n := range st.Requests {
			if n > 0 {
				ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(n), endpoint, strconv.Itoa(httpapi.Statuses[j]))
			}
		}
		buckets := make(map[float64]uint64, len(httpapi.LatencyBounds))
		var cumulative uint64
		for b, bound := range httpapi.LatencyBounds {
			cumulative += st.Buckets[b]
			buckets[bound.Seconds()] = cumulative
		}
		count := cumulative + st.Buckets[len(httpapi.LatencyBounds)]
		ch <- prometheus.MustNewConstHistogram(c.duration, count, st.Seconds, buckets, endpoint)
	}
}
