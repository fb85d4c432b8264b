package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/rls"
)

// Envoy's rate limit service (package rls) on --grpc-port, with the limits
// of --rls-config, reloaded when its files change or on SIGHUP, or those a
// control plane sends over xDS (--rls-xds-server, rlsxds.go).

// rlsReloadInterval is how often the config's files are looked at.
const rlsReloadInterval = time.Second

// rlsStopTimeout bounds the wait for the gRPC calls in progress at
// shutdown; they end before the shards stop.
const rlsStopTimeout = 5 * time.Second

// rlsSettings are the rate limit service's settings.
type rlsSettings struct {
	grpcPort int
	config   string // --rls-config: a file or a directory
	headers  yesNo  // --rls-response-headers
	grpcTLS  yesNo  // --grpc-tls
	xds      xdsSettings
	loaded   *rls.Config // the config to start with (empty with --rls-xds-server)
}

// addFlags defines the rate limit service's flags on fs.
func (s *rlsSettings) addFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.grpcPort, "grpc-port", 0, "serve Envoy's rate limit service (envoy.service.ratelimit.v3.RateLimitService), its quota service (envoy.service.rate_limit_quota.v3.RateLimitQuotaService) and grpc.health.v1.Health over gRPC on this port of --bind, with TLS when --tls-port or --grpc-tls is on (0: off); needs --rls-config or --rls-xds-server")
	fs.StringVar(&s.config, "rls-config", "", "the rate limit service's limits: a YAML file, or a directory of them, in envoyproxy/ratelimit's format (see docs/envoy.md); reloaded when it changes or on SIGHUP")
	fs.Var(&s.headers, "rls-response-headers", "yes: the rate limit service asks Envoy to add RateLimit-Policy, RateLimit and Retry-After to its responses: yes or no (default no)")
	fs.Var(&s.grpcTLS, "grpc-tls", "yes: --grpc-port speaks TLS with --tls-cert-file and --tls-key-file, asking for client certificates as --tls-auth-clients says, without a --tls-port: yes or no (default: as --tls-port)")
	s.xds.addFlags(fs)
}

// validateRLS checks the rate limit service's settings and loads its
// config, so that a bad one stops the start with its file and line;
// sources holds the flags set.
func (o *options) validateRLS(sources map[string]string) error {
	s := &o.rls
	switch {
	case s.grpcPort < 0 || s.grpcPort > 65535:
		return invalid("grpc-port", "--grpc-port %d: must be from 1 to 65535, or 0 for off", s.grpcPort)
	case s.grpcPort != 0 && (s.grpcPort == o.port || s.grpcPort == o.sec.tlsPort || s.grpcPort == o.metricsPort):
		return invalid("grpc-port", "--grpc-port %d: is already the client, TLS or metrics port", s.grpcPort)
	case s.config != "" && s.xds.server != "":
		return invalid("rls-xds-server", "--rls-xds-server and --rls-config exclude each other: the limits come from one or the other")
	case s.grpcPort != 0 && s.config == "" && s.xds.server == "":
		return invalid("rls-config", "--grpc-port needs --rls-config or --rls-xds-server: the limits to serve")
	case s.grpcPort == 0 && s.config != "":
		return invalid("rls-config", "--rls-config needs --grpc-port: the port to serve it on")
	case s.grpcPort == 0 && s.xds.server != "":
		return invalid("rls-xds-server", "--rls-xds-server needs --grpc-port: the port to serve its limits on")
	case s.grpcPort == 0 && bool(s.headers):
		return invalid("rls-response-headers", "--rls-response-headers needs --grpc-port")
	case s.grpcPort == 0 && bool(s.grpcTLS):
		return invalid("grpc-tls", "--grpc-tls needs --grpc-port")
	}
	if err := s.xds.validate(sources); err != nil || s.grpcPort == 0 {
		return err
	}
	if s.xds.server != "" {
		s.loaded, _ = rls.LoadXDS(nil) // none until the control plane sends some
		return nil
	}
	cfg, err := rls.Load(s.config)
	if err != nil {
		return &settingError{name: "rls-config", msg: "--rls-config: " + err.Error(), err: err}
	}
	s.loaded = cfg
	return nil
}

// rlsFront is the running rate limit service: its gRPC server, and its
// config's source: the watcher of --rls-config and the SIGHUP that reloads
// it, or the subscription to --rls-xds-server.
type rlsFront struct {
	service *rls.Service
	server  *rls.Server
	watcher *rls.Watcher // nil with --rls-xds-server
	xds     *rls.XDS     // nil with --rls-config
	hup     chan os.Signal
	stop    chan struct{}
	done    chan struct{}
}

// startRLS serves the rate limit service on ln, deciding on shards.
// served receives the listener's error if it fails.
func startRLS(o options, ln net.Listener, shards backend, clock rls.Clock, log *slog.Logger, served chan<- error) (*rlsFront, error) {
	log = log.With("component", "rls")
	svc := rls.New(shards, o.rls.loaded, rls.Options{
		ResponseHeaders: bool(o.rls.headers), MaxKeyLen: o.limits.MaxKeyLen, Clock: clock, Log: log,
	})
	f := &rlsFront{service: svc, hup: make(chan os.Signal, 1), stop: make(chan struct{}), done: make(chan struct{})}
	source := []any{"config", o.rls.config}
	if xo := o.rls.xds.loadedOptions; xo != nil {
		opts := *xo
		opts.Log = log
		x, err := rls.NewXDS(svc, opts)
		if err != nil {
			return nil, &settingError{name: "rls-xds-server", msg: "--rls-xds-server: " + err.Error(), err: err}
		}
		f.xds = x
		source = []any{"xds_server", opts.Server, "xds_node_id", opts.NodeID}
	} else {
		f.watcher = rls.NewWatcher(o.rls.config, svc, rlsReloadInterval, log)
	}
	srv := rls.NewServer(svc, rls.ServerOptions{
		TLS: o.access.clientTLS, MaxRecvMsgSize: int(o.limits.MaxRequestLen), Ready: shards.Ready,
	})
	f.server = srv
	go func() {
		if err := srv.Serve(ln); err != nil {
			served <- fmt.Errorf("--grpc-port: %w", err)
		}
	}()
	if f.xds != nil {
		f.xds.Start()
	} else {
		f.watcher.Start()
	}
	signal.Notify(f.hup, syscall.SIGHUP)
	go f.reloadOnHUP(log)
	cfg := o.rls.loaded
	log.Info("rate limit service listening", append([]any{"addr", ln.Addr().String(), "tls", o.access.clientTLS != nil,
		"domains", cfg.Domains(), "rules", cfg.Rules()}, source...)...)
	if o.access.clientTLS == nil && !isLoopbackBind(o.bind) {
		log.Warn("anyone who can reach --grpc-port may spend any domain's limits: Envoy's protocol has no password; restrict the network, or serve TLS with client certificates (--tls-port or --grpc-tls, --tls-auth-clients yes)")
	}
	return f, nil
}

// reloadOnHUP reloads the config on every SIGHUP until close. With
// --rls-xds-server there is nothing to reload (the control plane sends
// what changes), but the signal is still caught: by default it would end
// the process.
func (f *rlsFront) reloadOnHUP(log *slog.Logger) {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		case <-f.hup:
			if f.watcher == nil {
				log.Info("SIGHUP: nothing to reload, the rate limit config comes from the xDS control plane", "version", f.xds.Stats().Version)
				continue
			}
			f.watcher.Reload("SIGHUP") // a refusal is logged; the old config stays
		}
	}
}

// close stops taking calls, waits for those in progress (the shards still
// run), and stops reloading.
func (f *rlsFront) close() {
	if f == nil {
		return
	}
	signal.Stop(f.hup)
	close(f.stop)
	<-f.done
	if f.watcher != nil {
		f.watcher.Close()
	}
	if f.xds != nil {
		f.xds.Close()
	}
	f.server.Stop(rlsStopTimeout)
}
