// Package xdstest is an xDS control plane for tests: go-control-plane's
// own ADS server and snapshot cache, as Envoy Gateway runs them for
// envoyproxy/ratelimit, serving RateLimitConfig resources on 127.0.0.1.
// It records every request it receives, so that a test can see the
// acknowledgements and refusals, and it can be stopped and started again
// on the same address, forgetting its snapshots as a restarted control
// plane does.
package xdstest

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// ControlPlane is a running xDS server.
type ControlPlane struct {
	addr string
	tls  *tls.Config

	mu    sync.Mutex
	cache cachev3.SnapshotCache
	srv   *grpc.Server
	reqs  []Request
}

// Request is a request the control plane received, and when.
type Request struct {
	*discoverypb.DiscoveryRequest
	At time.Time
}

// Start serves on addr ("127.0.0.1:0" for a free port), with TLS when
// tlsConfig is not nil; the test's end stops it.
func Start(t testing.TB, addr string, tlsConfig *tls.Config) *ControlPlane {
	t.Helper()
	c := &ControlPlane{addr: addr, tls: tlsConfig}
	c.serve(t)
	t.Cleanup(c.Stop)
	return c
}

// Addr is the address the control plane listens on, host:port.
func (c *ControlPlane) Addr() string { return c.addr }

// serve listens on c.addr with a new, empty snapshot cache.
func (c *ControlPlane) serve(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if c.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(c.tls)))
	}
	cache := cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil)
	srv := grpc.NewServer(opts...)
	discoverypb.RegisterAggregatedDiscoveryServiceServer(srv, serverv3.NewServer(context.Background(), cache, serverv3.CallbackFuncs{
		StreamRequestFunc: func(_ int64, r *discoverypb.DiscoveryRequest) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.reqs = append(c.reqs, Request{r, time.Now()})
			return nil
		},
	}))
	c.mu.Lock()
	c.addr, c.cache, c.srv, c.reqs = ln.Addr().String(), cache, srv, nil
	c.mu.Unlock()
	go srv.Serve(ln)
}

// Set makes configs, under version, what the control plane serves to node.
func (c *ControlPlane) Set(t testing.TB, node, version string, configs ...*rlsconf.RateLimitConfig) {
	t.Helper()
	list := make([]types.Resource, len(configs))
	for i, cfg := range configs {
		list[i] = cfg
	}
	snap, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: list})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	cache := c.cache
	c.mu.Unlock()
	if err := cache.SetSnapshot(context.Background(), node, snap); err != nil {
		t.Fatal(err)
	}
}

// Stop ends every stream and stops listening.
func (c *ControlPlane) Stop() {
	c.mu.Lock()
	srv := c.srv
	c.mu.Unlock()
	srv.Stop()
}

// Restart serves again on the same address, with no snapshot and no
// requests recorded, as a control plane that restarted.
func (c *ControlPlane) Restart(t testing.TB) {
	t.Helper()
	c.Stop()
	c.serve(t)
}

// Requests are the requests received so far, in order.
func (c *ControlPlane) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.reqs...)
}

// Acked reports whether a request acknowledged version (a request naming
// it with no error_detail, answering a response: with a nonce).
func (c *ControlPlane) Acked(version string) bool {
	for _, r := range c.Requests() {
		if r.GetVersionInfo() == version && r.GetResponseNonce() != "" && r.GetErrorDetail() == nil {
			return true
		}
	}
	return false
}

// Refusals are the requests that carried an error_detail.
func (c *ControlPlane) Refusals() []Request {
	var out []Request
	for _, r := range c.Requests() {
		if r.GetErrorDetail() != nil {
			out = append(out, r)
		}
	}
	return out
}
