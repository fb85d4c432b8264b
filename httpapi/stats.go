package httpapi

import (
	"net/http"
	"sync/atomic"
	"time"
)

// The API's own counters, for the metrics: requests by endpoint and status,
// and how long they took. The decisions themselves are counted by the
// shards, with the RESP server's (rlserver_decisions_total).

// endpointID is an endpoint, for the counters.
type endpointID uint8

// The endpoints counted.
const (
	endpointDecide endpointID = iota
	endpointSettle
	endpointOther // every other path
	endpointCount
)

// Endpoints are the counted endpoints' names, by their place in Stats.
var Endpoints = [endpointCount]string{"/v1/decide", "/v1/settle", "other"}

// Statuses are the statuses the API answers with, by their place in
// Stats.
var Statuses = [...]int{
	http.StatusOK, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
	http.StatusMethodNotAllowed, http.StatusConflict, http.StatusGone, http.StatusRequestEntityTooLarge,
	http.StatusUnsupportedMediaType, http.StatusInternalServerError, http.StatusServiceUnavailable,
	http.StatusInsufficientStorage,
}

// LatencyBounds are the upper bounds of the duration histogram's buckets.
var LatencyBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond,
	2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
}

// Stats are the counters of one endpoint.
type Stats struct {
	// Requests counts the requests answered with each of Statuses.
	Requests [len(Statuses)]uint64
	// Buckets counts the requests answered within each of LatencyBounds
	// (not cumulative), then those slower; Seconds is their sum.
	Buckets [len(LatencyBounds) + 1]uint64
	Seconds float64
}

// stats are the counters, updated by every request at once.
type stats [endpointCount]struct {
	requests [len(Statuses)]atomic.Uint64
	buckets  [len(LatencyBounds) + 1]atomic.Uint64
	nanos    atomic.Uint64
}

// count counts a request of e answered with status in d.
func (s *stats) count(e endpointID, status int, d time.Duration) {
	c := &s[e]
	for j, st := range Statuses {
		if st == status {
			c.requests[j].Add(1)
		}
	}
	b := 0
	for b < len(LatencyBounds) && d > LatencyBounds[b] {
		b++
	}
	c.buckets[b].Add(1)
	c.nanos.Add(uint64(d))
}

// Stats returns each endpoint's counters, by their place in Endpoints.
func (s *Server) Stats() [endpointCount]Stats {
	var out [endpointCount]Stats
	for e := range s.stats {
		c := &s.stats[e]
		for j := range c.requests {
			out[e].Requests[j] = c.requests[j].Load()
		}
		for b := range c.buckets {
			out[e].Buckets[b] = c.buckets[b].Load()
		}
		out[e].Seconds = time.Duration(c.nanos.Load()).Seconds()
	}
	return out
}
