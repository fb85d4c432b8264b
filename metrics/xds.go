package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/rls"
)

// XDS is the rate limit service's subscription to its config over xDS
// (rls.XDS, --rls-xds-server).
type XDS interface {
	Stats() rls.XDSStats
}

// xdsCollector exports the subscription's state as rlserver_rls_xds_*
// (docs/envoy.md#metrics): whether a stream is open, the sets accepted and
// refused, and the version in force as an info gauge.
type xdsCollector struct {
	src XDS

	connected, streams, updates, config *prometheus.Desc
}

func newXDSCollector(src XDS) *xdsCollector {
	d := prometheus.NewDesc
	return &xdsCollector{
		src:       src,
		connected: d("rlserver_rls_xds_connected", "1 while a stream to the xDS control plane (--rls-xds-server) is open, else 0.", nil, nil),
		streams:   d("rlserver_rls_xds_streams_total", "xDS streams opened to the control plane.", nil, nil),
		updates: d("rlserver_rls_xds_updates_total", "Config sets from the xDS control plane, by result: accepted (put in force), refused (the config in force kept; a set sent again counts once).",
			[]string{"result"}, nil),
		config: d("rlserver_rls_xds_config_info", "1, labelled with the version_info of the xDS config in force (absent before the first).",
			[]string{"version"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *xdsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.streams, c.updates, c.config} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *xdsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	connected := 0.0
	if s.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, connected)
	ch <- prometheus.MustNewConstMetric(c.streams, prometheus.CounterValue, float64(s.Streams))
	ch <- prometheus.MustNewConstMetric(c.updates, prometheus.CounterValue, float64(s.Accepted), "accepted")
	ch <- prometheus.MustNewConstMetric(c.updates, prometheus.CounterValue, float64(s.Refused), "refused")
	if s.Accepted > 0 {
		ch <- prometheus.MustNewConstMetric(c.config, prometheus.GaugeValue, 1, s.Version)
	}
}
