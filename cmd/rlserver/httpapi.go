package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/rlserver/rlserver/httpapi"
)

// The decision API over HTTP (package httpapi) on --http-port: the same
// shards, users, TLS and limits as the Redis protocol.

// httpStopTimeout bounds the wait for the HTTP requests in progress at
// shutdown; they end before the shards stop.
const httpStopTimeout = 5 * time.Second

// addHTTPFlags defines the HTTP API's flag on fs.
func (o *options) addHTTPFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.httpPort, "http-port", 0, "serve the decision API over HTTP (POST /v1/decide, /v1/settle; see docs/http.md) on this port of --bind, "+
		"with TLS when --tls-port is on, HTTP/1.1 and HTTP/2, as the same users (0: off)")
}

// validateHTTP checks --http-port against the other ports.
func (o *options) validateHTTP() error {
	p := o.httpPort
	switch {
	case p < 0 || p > 65535:
		return invalid("http-port", "--http-port %d: must be from 1 to 65535, or 0 for off", p)
	case p != 0 && (p == o.port || p == o.sec.tlsPort || p == o.metricsPort || p == o.rls.grpcPort):
		return invalid("http-port", "--http-port %d: is already the client, TLS, metrics or gRPC port", p)
	}
	return nil
}

// startHTTP serves the HTTP API on ln, deciding on shards. served receives
// the listener's error if it fails.
func startHTTP(o options, ln net.Listener, shards backend, log *slog.Logger, served chan<- error) *httpapi.Server {
	log = log.With("component", "http")
	srv := httpapi.New(httpapi.Config{
		Shards: shards, Users: o.access.users, ProtectedMode: bool(o.sec.protectedMode),
		RequestTimeout: o.reqTimeout, MaxKeyLen: o.limits.MaxKeyLen, MaxBodyLen: o.limits.MaxRequestLen,
		TLS: o.access.clientTLS, IdleTimeout: o.idleTimeout(), Log: log,
	})
	go func() {
		if err := srv.Serve(ln); err != nil {
			served <- fmt.Errorf("--http-port: %w", err)
		}
	}()
	log.Info("HTTP API listening", "addr", ln.Addr().String(), "tls", o.access.clientTLS != nil)
	return srv
}

// stopHTTP stops taking requests and waits for those in progress.
func stopHTTP(srv *httpapi.Server, log *slog.Logger) {
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpStopTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("HTTP API: requests still in progress at shutdown were cut", "err", err)
	}
}
