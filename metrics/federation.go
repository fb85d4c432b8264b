package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/federation"
)

// Federation is a region's part in a federation (federation.Federation).
type Federation interface {
	Stats() federation.Stats
}

// federationCollector exports a region's federation counters, its links
// and the relaxed keys' overshoot bound (docs/federation.md#metrics).
type federationCollector struct {
	src Federation

	leases, leaseErrors, installs, units, floorBlocks, seals, counts, authFailures *prometheus.Desc
	bound, boundRatio, linkUp, linkRTT                                             *prometheus.Desc
}

func newFederationCollector(src Federation) *federationCollector {
	d := prometheus.NewDesc
	region := []string{"region"}
	return &federationCollector{
		src: src,
		leases: d("rlserver_federation_lease_requests_total",
			"Strict global keys' lease requests: sent by this node's agent to the keys' homes (direction=sent), or answered here for the other regions (direction=served).",
			[]string{"direction"}, nil),
		leaseErrors: d("rlserver_federation_lease_errors_total", "Lease requests this node's agent sent that got no answer (their keys ask again the next round).", nil, nil),
		installs:    d("rlserver_federation_grants_recorded_total", "Homes' answers recorded in this region's keys (a retry's answer to a request already answered is not).", nil, nil),
		units:       d("rlserver_federation_units_granted_total", "Units of the blocks this region's keys were granted by their homes.", nil, nil),
		floorBlocks: d("rlserver_federation_floor_blocks_total", "Blocks of the partition floor given to keys whose home could not be reached (--global-partition-floor).", nil, nil),
		seals:       d("rlserver_federation_seals_total", "Keys whose blocks were retired for want of demand, so that their homes refund them.", nil, nil),
		counts: d("rlserver_federation_counts_total", "Relaxed keys' counts sent to the other regions (direction=sent) and received from them (direction=received).",
			[]string{"direction"}, nil),
		authFailures: d("rlserver_federation_auth_failures_total", "Connections to the federation port refused: a wrong secret or an unknown region.", nil, nil),
		bound: d("rlserver_federation_relaxed_overshoot_bound",
			"The largest overshoot bound of a relaxed global key computed in the last two rounds, in units: what the regions together may admit past its limit in a window (RL.INFO's overshoot_bound).", nil, nil),
		boundRatio: d("rlserver_federation_relaxed_overshoot_bound_ratio", "rlserver_federation_relaxed_overshoot_bound as a fraction of that key's limit.", nil, nil),
		linkUp:     d("rlserver_federation_link_up", "1 while this node's link to a region is connected and authenticated.", region, nil),
		linkRTT:    d("rlserver_federation_link_rtt_seconds", "The smoothed round trip of a batch on this node's link to a region.", region, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *federationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leases, c.leaseErrors, c.installs, c.units, c.floorBlocks, c.seals,
		c.counts, c.authFailures, c.bound, c.boundRatio, c.linkUp, c.linkRTT} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *federationCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	counter := prometheus.CounterValue
	metric(c.leases, counter, float64(s.LeasesSent), "sent")
	metric(c.leases, counter, float64(s.LeasesServed), "served")
	metric(c.leaseErrors, counter, float64(s.LeaseErrors))
	metric(c.installs, counter, float64(s.Installs))
	metric(c.units, counter, float64(s.UnitsGranted))
	metric(c.floorBlocks, counter, float64(s.FloorBlocks))
	metric(c.seals, counter, float64(s.Seals))
	metric(c.counts, counter, float64(s.CountsSent), "sent")
	metric(c.counts, counter, float64(s.CountsReceived), "received")
	metric(c.authFailures, counter, float64(s.AuthFailures))
	metric(c.bound, prometheus.GaugeValue, float64(s.OvershootBound))
	metric(c.boundRatio, prometheus.GaugeValue, s.OvershootBoundRatio)
	for _, l := range s.Links {
		up := 0.0
		if l.Up {
			up = 1
		}
		metric(c.linkUp, prometheus.GaugeValue, up, l.Region)
		metric(c.linkRTT, prometheus.GaugeValue, float64(l.RTTMillis)/1000, l.Region)
	}
}
