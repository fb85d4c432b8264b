// Command rlserver is a rate-limit server that speaks the Redis protocol.
//
//	rlserver --data-dir /var/lib/rlserver          # one durable node
//	rlserver --in-memory                           # no files at all
//	rlserver --node-id n1 --port 6381 --data-dir d1 \
//	  --cluster n1@127.0.0.1:6381,n2@127.0.0.1:6382,n3@127.0.0.1:6383 --shards 8
//
// Any Redis client asks it one atomic question, such as
// RL.SLIDING user:ada 100 60000, and gets the decision plus what an HTTP API
// needs for a 429 with Retry-After and RateLimit headers. See README.md and
// docs/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/cluster/placement"
	"github.com/rlserver/rlserver/federation"
	"github.com/rlserver/rlserver/httpapi"
	"github.com/rlserver/rlserver/internal/gcpacer"
	"github.com/rlserver/rlserver/metrics"
	"github.com/rlserver/rlserver/persistence"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// commit is the revision the binary was built from: set at build time
// with -ldflags "-X main.commit=..." (a build outside the repository), or
// read from what go build records of the checkout.
var commit = ""

// backend is the shard layer main wires into the server and the metrics.
type backend interface {
	server.Shards
	server.BackupSource
	metrics.Shards
	metrics.Readiness
	Close() error
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
}

// run starts rlserver and serves until SIGINT or SIGTERM; it returns the exit
// status. lookupEnv reads the environment (os.LookupEnv).
func run(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if len(args) > 0 {
		switch args[0] {
		case "backup":
			return runBackup(args[1:], stdout, stderr, lookupEnv)
		case "restore":
			return runRestore(args[1:], stdout, stderr, lookupEnv)
		case "recover":
			return runRecover(args[1:], stdout, stderr, lookupEnv)
		case "health":
			return runHealth(args[1:], stdout, stderr, lookupEnv)
		case "version":
			fmt.Fprintln(stdout, versionLine())
			return 0
		}
	}
	o, err := parseFlags(args, stderr, lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "rlserver:", err)
		return 2
	}
	if o.version {
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	log := newLogger(o, logWriter(o, stdout, stderr))
	if len(o.ratelimitIgnored) > 0 {
		log.Info("envoyproxy/ratelimit's variables that rlserver has no use for (docs/envoy.md says why)", "ignored", strings.Join(o.ratelimitIgnored, ","))
	}
	if o.pprof != "" {
		if err := servePprof(o.pprof, log); err != nil {
			fmt.Fprintln(stderr, "rlserver: --pprof:", err)
			return 1
		}
	}
	if err := serve(o, log); err != nil {
		fmt.Fprintln(stderr, "rlserver:", err)
		return 1
	}
	return 0
}

// serve wires the layers, serves until a signal, and shuts down in order:
// say not ready, stop taking commands and answer the ones in flight (the
// rate limit service's, then the Redis protocol's), stop
// the shards (handing leadership over and snapshotting in durable mode),
// and stop serving metrics last.
func serve(o options, log *slog.Logger) error {
	r, err := start(o, log)
	if err != nil {
		return err
	}
	// The collector's pace follows what it must scan, not the keys, and
	// leaves room for a snapshot's copies (see gcpacer), for as long as the
	// server serves.
	paced := make(chan struct{})
	defer close(paced)
	go gcpacer.Run(gcpacer.Config{Percent: o.gcPercent, Reserved: cluster.CaptureCopyBound}, paced)
	// Catch the signals before saying ready: a SIGTERM right after the ready
	// line must stop the server in order, not kill it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	r.announce(o, log)
	r.serveClients(o)
	var halted <-chan error // nil in memory: never ready
	if r.node != nil {
		halted = r.node.Halted()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		if r.node != nil {
			leaveIfBeyond(o.fleet, o.nodeID, r.node, log)
		}
	case err = <-r.served:
		log.Error("listener failed", "err", err)
	case err = <-halted:
		// Stop at once, as a crash would: closing in order would snapshot
		// a state that skipped the entry. On restart the node replays its
		// log and stops here again, until it is upgraded; a node the
		// cluster removed refuses to start again.
		log.Error("stopping: this node cannot go on", "err", err)
		return err
	}
	return r.stop(err, log)
}

// running is a started rlserver: its listeners and the layers wired on
// them.
type running struct {
	lns    *listeners
	shards backend
	node   *placement.Node // nil in memory
	mode   string          // the node's mode, for the log
	srv    *server.Server
	front  *rlsFront              // nil without --grpc-port
	fed    *federation.Federation // nil without --region
	http   *httpapi.Server        // nil without --http-port
	m      *metrics.Metrics       // nil without --metrics-port
	served chan error             // a listener that failed
}

// start takes the listeners and starts every layer, releasing what it took
// when one fails.
func start(o options, log *slog.Logger) (r *running, err error) {
	var clock cluster.Clock = cluster.SystemClock{}
	var debug server.DebugClock
	faults := newDebugFaults(o)
	if faults.clock != nil {
		clock, debug = faults.clock, faults.clock
	}
	var taken releases // what a failure gives back
	defer func() {
		if err != nil {
			taken.release()
		}
	}()
	lns, err := listen(o)
	if err != nil {
		return nil, err
	}
	taken.add(lns.close)
	cfg := serverConfig(o, clock, debug)
	if faults.disk != nil {
		cfg.DebugDisk = faults.disk
	}
	// The flags were validated, so this holds; checked before the shards
	// start all the same, so that New cannot fail after them.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The metrics' port is taken, and raft's measurements caught, before
	// the shards start: a busy port fails the start at once, and the
	// restores of the shards' snapshots are measured.
	obs, err := startObserving(o)
	if err != nil {
		return nil, err
	}
	taken.add(obs.close)
	if obs.latency != nil {
		cfg.Observer = obs.latency
	}
	r = &running{lns: lns, served: make(chan error, 3)}
	if r.shards, r.node, r.mode, err = openShards(o, lns.clientAddr(), clock, faults.disk, log); err != nil {
		return nil, err
	}
	taken.add(func() { r.shards.Close() })
	wireShards(o, &cfg, r)
	if lns.fed != nil {
		if r.fed, err = newFederation(o, r.shards, r.node, log); err != nil {
			return nil, err
		}
		cfg.Federation = r.fed
	}
	if r.srv, err = server.New(cfg, r.shards); err != nil {
		return nil, err
	}
	if lns.grpc != nil {
		if r.front, err = startRLS(o, lns.grpc, r.shards, clock, log, r.served); err != nil {
			return nil, err
		}
	}
	if r.fed != nil {
		startFederation(o, r.fed, lns.fed, log, r.served)
	}
	if lns.http != nil {
		r.http = startHTTP(o, lns.http, r.shards, log, r.served)
	}
	// From here on a failure also stops what was started above, before the
	// shards it uses; serve closes the metrics' listener itself when it
	// fails.
	taken = releases{lns.close, func() {
		r.closeFederation()
		r.front.close()
		stopHTTP(r.http, log)
		r.shards.Close()
	}}
	if r.m, err = obs.serve(o, r.shards, r.node, r.srv, r.front, r.fed, r.http, log); err != nil {
		return nil, err
	}
	return r, nil
}

// wireShards tells the server's configuration what the opened shards can
// do: back up, answer Raft's commands, change the cluster.
func wireShards(o options, cfg *server.Config, r *running) {
	cfg.Backups = r.shards
	if r.node == nil {
		cfg.AnswersInSubmit = true // memory shards answer within Submit
		return
	}
	cfg.Raft, cfg.DataDir = r.node, o.dataDir
	if o.cluster != "" || o.join != "" {
		cfg.Cluster, cfg.ClusterChanges = r.node, r.node
	}
}

// releases are what a failed start gives back, in the order they were
// taken: the listeners first, so that nothing new arrives while the rest
// stops.
type releases []func()

// add records a release.
func (t *releases) add(f func()) { *t = append(*t, f) }

// release makes every recorded release, oldest first.
func (t releases) release() {
	for _, f := range t {
		f()
	}
}

// serverConfig is the Redis protocol server's configuration from the
// settings.
func serverConfig(o options, clock cluster.Clock, debug server.DebugClock) server.Config {
	memory, _ := o.memoryLimit() // validated with the other settings
	cfg := server.DefaultConfig()
	cfg.Limits, cfg.MaxClients, cfg.MaxMemory, cfg.EventLoops = o.limits, o.maxClients, memory, o.eventLoops
	cfg.Users, cfg.ProtectedMode, cfg.IdleTimeout = o.access.users, bool(o.sec.protectedMode), o.idleTimeout()
	cfg.RequestTimeout = o.reqTimeout
	cfg.Federated = o.fed.region != ""
	cfg.Version, cfg.Clock, cfg.Debug = version, clock, debug
	if o.configPath != "" {
		cfg.ConfigFile = absPath(o.configPath)
	}
	return cfg
}

// announce logs the access settings and that the node is ready, with its
// addresses.
func (r *running) announce(o options, log *slog.Logger) {
	logAccess(log, o)
	ready := []any{"version", version, "addr", r.lns.clientAddr()}
	if r.lns.tls != nil {
		ready = append(ready, "tls_addr", r.lns.tls.Addr().String())
	}
	if r.lns.grpc != nil {
		ready = append(ready, "grpc_addr", r.lns.grpc.Addr().String())
	}
	if r.lns.fed != nil {
		ready = append(ready, "federation_addr", r.lns.fed.Addr().String(), "region", o.fed.region)
	}
	if r.lns.http != nil {
		ready = append(ready, "http_addr", r.lns.http.Addr().String())
	}
	log.Info("rlserver ready", append(ready, "shards", r.shards.Shards(), "mode", r.mode, "debug", o.debug)...)
}

// serveClients serves the Redis protocol on the plain and TLS listeners;
// a listener that fails is reported on r.served.
func (r *running) serveClients(o options) {
	if r.lns.plain != nil {
		go func() { r.served <- r.srv.Serve(r.lns.plain) }()
	}
	if r.lns.tls != nil {
		go func() { r.served <- r.srv.ServeTLS(r.lns.tls, o.access.clientTLS) }()
	}
}

// stop shuts the layers down in order, and returns err with what closing
// the shards failed with.
func (r *running) stop(err error, log *slog.Logger) error {
	if r.m != nil {
		r.m.Stopping()
	}
	r.front.close() // its calls in progress still reach the shards
	r.closeFederation()
	stopHTTP(r.http, log)
	r.srv.Close()
	if cerr := r.shards.Close(); cerr != nil {
		log.Error("closing shards", "err", cerr)
		err = errors.Join(err, cerr)
	}
	if r.m != nil {
		r.m.Close()
	}
	log.Info("stopped")
	return err
}

// closeFederation stops the federation's agent and server, if on.
func (r *running) closeFederation() {
	if r.fed != nil {
		r.fed.Close()
	}
}

// raftSettings is the shard layer's configuration for a durable node: its
// members, its data directory (created with its identity, or checked
// against it), and the settings. rlserver restore prepares a data directory
// with it too, so that the node then starts as from any other.
func raftSettings(o options, clientAddr string, clock cluster.Clock, log *slog.Logger) (placement.Config, error) {
	have, _, err := persistence.ReadIdentity(o.dataDir)
	if err != nil {
		return placement.Config{}, err
	}
	joined := have.Cluster != "" && len(have.Initial) == 0 // it joined its cluster
	self, members, err := o.members(clientAddr, have.Initial, joined)
	if err != nil {
		return placement.Config{}, err
	}
	if len(have.Initial) > 0 && o.cluster != "" && o.cluster != strings.Join(have.Initial, ",") {
		if flagMembers, err := o.clusterMembers(); err == nil && !sameMembers(flagMembers, members) {
			log.Warn("--cluster differs from the members this data directory was created with; it is read only when a data directory is created: "+
				"the cluster's catalogue says who the members are now (add nodes with --join, remove them with CLUSTER FORGET)", "cluster", o.cluster)
		}
	}
	want := persistence.Identity{NodeID: self.ID, Shards: o.shards}
	if len(members) > 0 { // one of the initial members, or a single node
		want.Members, want.Initial = cluster.MemberList(members), initialList(members)
	}
	opened, err := persistence.Open(o.dataDir, want)
	if err != nil {
		return placement.Config{}, identityInFlags(err)
	}
	cfg := placement.DefaultConfig(self, members)
	cfg.Shards, cfg.Layout, cfg.Clock, cfg.BusTLS = o.shards, opened.Layout, clock, o.access.busTLS
	cfg.Incarnation, cfg.Upgraded, cfg.ReplaceDeadAfter = opened.Identity.Incarnation, opened.Upgraded, o.replaceDead
	cfg.AutoRebalance = o.fleet.autoRebalance
	cfg.Log = log
	cfg.LogStore, cfg.LogJournal = o.raftLogStore(), o.raftJournal
	cfg.RequestTimeout = o.reqTimeout
	cfg.MaxClockOffset, cfg.SlowLogWrite = o.checks.maxClockOffset, o.checks.slowLogWrite
	if o.join != "" {
		if cfg.Join, err = o.joinBus(); err != nil {
			return placement.Config{}, err
		}
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = cluster.DefaultClusterHeartbeat, cluster.DefaultClusterHeartbeat
	}
	if o.heartbeat != 0 { // --raft-heartbeat is both timeouts
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = o.heartbeat, o.heartbeat
	}
	if o.snapInterval != 0 {
		cfg.SnapshotInterval = o.snapInterval
	}
	if o.snapThreshold != 0 {
		cfg.SnapshotThreshold = o.snapThreshold
	}
	cfg.SnapshotLogPercent = o.snapLogPercent
	cfg.SnapshotNice = o.snapNice
	return cfg, nil
}

// openShards starts the shard layer --in-memory, --data-dir and --cluster ask
// for, and names the mode for the log. node is nil in memory. disk, when
// not nil, are the faults DEBUG DISK injects into a durable node's logs.
// hashicorp/raft logs into log too, at the levels cluster gives its
// records.
func openShards(o options, clientAddr string, clock cluster.Clock, disk *persistence.DiskFaults, log *slog.Logger) (shards backend, node *placement.Node, mode string, err error) {
	scripts := newScripts(log)
	if o.inMemory {
		cfg := cluster.DefaultMemoryConfig()
		cfg.Shards, cfg.Clock, cfg.Scripts, cfg.SnapshotNice = o.shards, clock, scripts, o.snapNice
		m, err := cluster.NewMemoryShards(cfg)
		if err != nil {
			return nil, nil, "", err
		}
		return m, nil, "in-memory", nil
	}
	node, mode, err = startDurable(o, clientAddr, clock, disk, scripts, log)
	if err != nil && forgottenDataDir(err) && o.fleet.rejoinIfForgotten {
		log.Warn("the cluster has forgotten this data directory: wiping it to join again as a new node (--rejoin-if-forgotten)", "data_dir", o.dataDir, "err", err)
		if err = wipeDataDir(o.dataDir); err == nil {
			node, mode, err = startDurable(o, clientAddr, clock, disk, scripts, log)
		}
	}
	if err != nil {
		return nil, nil, "", err
	}
	return durable{node.DataPlane(), node}, node, mode, nil
}

// startDurable starts a durable node: a single node, or one of a cluster
// on its bus listener.
func startDurable(o options, clientAddr string, clock cluster.Clock, disk *persistence.DiskFaults, scripts *script.Runner, log *slog.Logger) (node *placement.Node, mode string, err error) {
	cfg, err := raftSettings(o, clientAddr, clock, log)
	if err != nil {
		return nil, "", err
	}
	cfg.Scripts, cfg.DiskFaults = scripts, disk
	self := cfg.Self
	mode = "durable single node (" + o.dataDir + ")"
	if len(cfg.Members) > 1 || o.join != "" {
		listen := self.Bus
		if o.busListen != "" {
			listen = o.busListen
		}
		if cfg.Bus, err = net.Listen("tcp", listen); err != nil {
			return nil, "", fmt.Errorf("bus port: %w", err)
		}
		mode = fmt.Sprintf("cluster node %s (%s), bus %s", self.ID, o.dataDir, self.Bus)
		if listen != self.Bus {
			mode += " listening on " + listen
		}
	}
	if node, err = placement.Start(cfg); err != nil {
		if cfg.Bus != nil {
			cfg.Bus.Close()
		}
		return nil, "", err
	}
	return node, mode, nil
}

// durable is a durable node's shards as the server and the metrics see
// them: its data plane, which closes with the node (placement.Node.Close
// stops its control plane first).
type durable struct {
	*cluster.RaftShards
	node *placement.Node
}

// Close closes the node.
func (d durable) Close() error { return d.node.Close() }

// initialList is members as the data directory records its initial
// members: "id@host:port@busport", which cluster.ParseMembers reads back.
func initialList(members []cluster.Member) []string {
	if len(members) < 2 {
		return nil
	}
	out := make([]string, len(members))
	for i, m := range members {
		_, bus, _ := net.SplitHostPort(m.Bus)
		out[i] = m.ID + "@" + m.Client + "@" + bus
	}
	return out
}

// sameMembers reports whether a and b list the same members, in order.
func sameMembers(a, b []cluster.Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// newScripts is the Lua runner of the shards' scripts (EVAL), which a
// shard's replicated entries need to be applied.
func newScripts(log *slog.Logger) *script.Runner {
	return script.New(script.Config{ErrorText: server.ErrorText, Log: log, RedisVersion: server.RedisVersion})
}
