package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is rlserver's Prometheus registry and the HTTP endpoints that
// serve it: /metrics, /healthz and /readyz.
type Metrics struct {
	src      Sources
	registry *prometheus.Registry
	stopping atomic.Bool // set by Stopping: /readyz says no from then on
	http     *http.Server
	routes   []func(mux *http.ServeMux) // AddRoutes
	onClose  []func()                   // OnClose
}

// New returns the metrics of src: rlserver's own, Go's runtime and the
// process's (CPU, memory, file descriptors). src.Shards and src.Server are
// required.
func New(src Sources) (*Metrics, error) {
	if src.Shards == nil || src.Server == nil {
		return nil, errors.New("metrics: Sources.Shards and Sources.Server are required")
	}
	m := &Metrics{src: src, registry: prometheus.NewRegistry()}
	cs := []prometheus.Collector{
		newCollector(src, m.notReady),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	if src.Latency != nil {
		cs = append(cs, src.Latency)
	}
	if src.RaftSink != nil {
		cs = append(cs, src.RaftSink)
	}
	if src.Federation != nil {
		cs = append(cs, newFederationCollector(src.Federation))
	}
	if src.RLS != nil {
		cs = append(cs, newRLSCollector(src.RLS))
	}
	if src.RLQS != nil {
		cs = append(cs, newRLQSCollector(src.RLQS))
	}
	if src.XDS != nil {
		cs = append(cs, newXDSCollector(src.XDS))
	}
	if src.HTTP != nil {
		cs = append(cs, newHTTPCollector(src.HTTP))
	}
	for _, c := range cs {
		if err := m.registry.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return m, nil
}

// Registry is the registry the metrics are in, for tests and for adding
// more.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// AddRoutes has register add its paths beside /metrics (the status page),
// with the same access: call it before Serve.
func (m *Metrics) AddRoutes(register func(mux *http.ServeMux)) {
	m.routes = append(m.routes, register)
}

// Handler serves /metrics, /healthz, /readyz (also as /healthcheck), and
// the routes added.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", m.healthz)
	mux.HandleFunc("GET /readyz", m.readyz)
	// envoyproxy/ratelimit's path for the same question, which the probes
	// of a deployment made for it (Envoy Gateway's) ask.
	mux.HandleFunc("GET /healthcheck", m.readyz)
	for _, register := range m.routes {
		register(mux)
	}
	return mux
}

// Serve serves Handler on ln in the background until Close.
func (m *Metrics) Serve(ln net.Listener, log *slog.Logger) {
	m.http = &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "err", err)
		}
	}()
}

// Stopping makes /readyz answer 503 from now on: the node is shutting down,
// and load balancers should send its clients elsewhere while it drains.
func (m *Metrics) Stopping() { m.stopping.Store(true) }

// OnClose has Close call fn once it has stopped serving (the status page's
// sampler).
func (m *Metrics) OnClose(fn func()) { m.onClose = append(m.onClose, fn) }

// Close stops serving, letting scrapes in progress finish for up to a
// second, then calls the OnClose functions.
func (m *Metrics) Close() error {
	var err error
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = m.http.Shutdown(ctx)
	}
	for _, fn := range m.onClose {
		fn()
	}
	return err
}

// errStopping is /readyz's answer once shutdown has begun.
var errStopping = errors.New("not ready: shutting down")
