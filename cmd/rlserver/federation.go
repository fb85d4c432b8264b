package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/cluster/placement"
	"github.com/rlserver/rlserver/federation"
)

// A federation of regions (package federation): --region names this one,
// --federation lists the others, --federation-port serves them.

// fedSettings are the federation's settings.
type fedSettings struct {
	region string
	peers  string // --federation as given
	port   int
	secret string
	tls    yesNo
	sync   time.Duration
	ttl    time.Duration
	floor  string
	parsed federation.Config // what validateFederation made of them
}

// addFlags defines the federation's flags on fs.
func (s *fedSettings) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.region, "region", "", "this region's name in a federation (letters, digits, -_.); with --federation")
	fs.StringVar(&s.peers, "federation", "", "the other regions of this region's federation: name@host:port,... (their --federation-port; a name given twice lists two of its nodes); see docs/federation.md")
	fs.IntVar(&s.port, "federation-port", 0, "serve the other regions on this port of --bind, with --region (0: any free port, logged at start)")
	fs.StringVar(&s.secret, "federation-secret", "", "the secret every node of every region shares, at least 16 bytes: each end of a link proves it knows it (set it in the environment or the config file rather than on the command line)")
	fs.Var(&s.tls, "federation-tls", "yes: the links between regions are mutual TLS with --tls-cert-file, each end checking the other's against --tls-ca-cert-file: yes or no (default no)")
	fs.DurationVar(&s.sync, "federation-sync", federation.DefaultSync, "how often a region renews its global keys' blocks and sends its relaxed keys' counts (10ms to 1m)")
	fs.DurationVar(&s.ttl, "global-lease-ttl", federation.DefaultLeaseTTL, "the longest a strict global key's block lasts: what a region cut off keeps admitting for (at least twice --federation-sync)")
	fs.StringVar(&s.floor, "global-partition-floor", "0", "what a region cut off from a strict key's home admits once its blocks are gone: 0 (nothing), share (its last fair share) or a percentage of the limit (10%); anything but 0 may go over the limit while the region is cut off")
}

// validateFederation checks the federation's settings and builds its
// config; it needs the access settings loaded (its TLS is theirs:
// validateSecurity checked that --federation-tls has its files).
func (o *options) validateFederation() error {
	s := &o.fed
	switch {
	case s.region == "" && (s.peers != "" || s.port != 0 || s.secret != ""):
		return invalid("region", "--federation, --federation-port and --federation-secret need --region: this region's name")
	case s.region == "":
		return nil
	case s.peers == "":
		return invalid("federation", "--region needs --federation: the other regions")
	case s.port < 0 || s.port > 65535:
		return invalid("federation-port", "--federation-port %d: must be from 1 to 65535, or 0 for any free port", s.port)
	case s.port != 0 && (s.port == o.port || s.port == o.sec.tlsPort || s.port == o.metricsPort || s.port == o.rls.grpcPort):
		return invalid("federation-port", "--federation-port %d: is already another of this node's ports", s.port)
	}
	peers, err := federation.ParsePeers(s.peers)
	if err != nil {
		return invalid("federation", "--federation: %v", err)
	}
	floor, err := federation.ParseFloor(s.floor)
	if err != nil {
		return invalid("global-partition-floor", "--global-partition-floor: %v", err)
	}
	cfg := federation.Config{Region: s.region, Peers: peers, Secret: s.secret, Sync: s.sync, LeaseTTL: s.ttl, Floor: floor}
	if t := o.access.fedTLS; t != nil {
		cfg.ServerTLS, cfg.ClientTLS = t.ServerConfig(), t.ClientConfig()
	}
	if _, err := federation.New(cfg, nil); err != nil { // checks, starts nothing
		return invalid("region", "--region, --federation: %v", err)
	}
	s.parsed = cfg
	return nil
}

// listenFederation takes the federation's port, when on.
func listenFederation(o options) (net.Listener, error) {
	if o.fed.region == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.fed.port)))
	if err != nil {
		return nil, fmt.Errorf("--federation-port: %w", err)
	}
	return ln, nil
}

// newFederation is the region's federation on shards, not started: its
// agent works the shards this node leads (every shard in memory).
func newFederation(o options, shards backend, node *placement.Node, log *slog.Logger) (*federation.Federation, error) {
	cfg := o.fed.parsed
	cfg.Log = log.With("component", "federation")
	if node != nil {
		cfg.Leads = func(shard int) bool {
			_, local, ok := node.Leader(shard)
			return ok && local
		}
	}
	return federation.New(cfg, shards)
}

// startFederation starts fed: its server answers on ln, its agent
// renews. served receives the listener's error if it fails.
func startFederation(o options, fed *federation.Federation, ln net.Listener, log *slog.Logger, served chan<- error) {
	cfg := o.fed.parsed
	log = log.With("component", "federation")
	go func() {
		if err := fed.Serve(ln); err != nil {
			served <- fmt.Errorf("--federation-port: %w", err)
		}
	}()
	fed.Start()
	log.Info("federation", "region", cfg.Region, "addr", ln.Addr().String(), "regions", len(cfg.Peers)+1,
		"sync", cfg.Sync, "lease_ttl", cfg.LeaseTTL, "partition_floor", cfg.Floor.String(), "tls", cfg.ServerTLS != nil)
	if cfg.ServerTLS == nil && !isLoopbackBind(o.bind) {
		log.Warn("the links between regions are not encrypted: anyone on the path reads the global keys' names; use --federation-tls")
	}
}
