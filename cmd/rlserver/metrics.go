package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/rlserver/rlserver/cluster/placement"
	"github.com/rlserver/rlserver/federation"
	"github.com/rlserver/rlserver/httpapi"
	"github.com/rlserver/rlserver/metrics"
	"github.com/rlserver/rlserver/server"
	"github.com/rlserver/rlserver/status"
)

// observing is what --metrics-port sets up before the shards start; all of
// it is nil without the flag, so nothing is measured.
type observing struct {
	ln      net.Listener
	latency *metrics.Latency
	sink    *metrics.RaftSink
}

// startObserving takes the metrics port on --bind and starts catching
// raft's measurements and the server's latencies.
func startObserving(o options) (observing, error) {
	if o.metricsPort == 0 {
		return observing{}, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.metricsPort)))
	if err != nil {
		return observing{}, fmt.Errorf("--metrics-port: %w", err)
	}
	sink := metrics.NewRaftSink()
	if err := sink.Install(); err != nil {
		ln.Close()
		return observing{}, fmt.Errorf("--metrics-port: %w", err)
	}
	return observing{ln: ln, latency: metrics.NewLatency(), sink: sink}, nil
}

// serve serves the metrics of the wired layers on the metrics port, and the
// status page beside them unless --status-page no; it returns nil without
// --metrics-port. Closing the Metrics stops the page.
func (ob observing) serve(o options, shards backend, node *placement.Node, srv *server.Server, front *rlsFront,
	fed *federation.Federation, api *httpapi.Server, log *slog.Logger) (*metrics.Metrics, error) {
	if ob.ln == nil {
		return nil, nil
	}
	src := metrics.Sources{
		Version: version, Shards: shards, Server: srv, Ready: shards,
		Latency: ob.latency, RaftSink: ob.sink, Top: srv,
	}
	if node != nil {
		src.Raft, src.Fitness = node, node // not a nil *Node in the interfaces
		if o.cluster != "" || o.join != "" {
			src.Rebalance = node
		}
	}
	if front != nil {
		src.RLS, src.RLQS = front.service, front.server.Quota()
		if front.xds != nil {
			src.XDS = front.xds // not a nil *rls.XDS in the interface
		}
	}
	if fed != nil {
		src.Federation = fed
	}
	if api != nil {
		src.HTTP = api
	}
	m, err := metrics.New(src)
	if err != nil {
		ob.close()
		return nil, err
	}
	paths := "/metrics /healthz /readyz"
	if o.statusPage {
		ps := status.Sources{Version: version, Node: o.nodeID, Shards: shards, Server: srv, Ready: shards}
		if node != nil {
			ps.Cluster = node
		}
		page, err := status.New(ps)
		if err != nil {
			ob.close()
			return nil, err
		}
		page.Start()
		m.AddRoutes(page.Register)
		m.OnClose(page.Close)
		paths += " / /status.json"
	}
	log.Info("metrics listening", "addr", ob.ln.Addr().String(), "paths", paths)
	m.Serve(ob.ln, log)
	return m, nil
}

// close lets the metrics port go when the start fails.
func (ob observing) close() {
	if ob.ln != nil {
		ob.ln.Close()
	}
}
