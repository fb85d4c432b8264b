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
	"github.com/rlserver/rlserver/internal/gcpacer"
	"github.com/rlserver/rlserver/metrics"
	"github.com/rlserver/rlserver/persistence"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

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
		fmt.Fprintln(stdout, "rlserver", version)
		return 0
	}
	log := newLogger(o, stderr)
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
	var clock cluster.Clock = cluster.SystemClock{}
	var debug server.DebugClock
	if o.debug {
		dc := &cluster.DebugClock{}
		clock, debug = dc, dc
	}
	lns, err := listen(o)
	if err != nil {
		return err
	}
	memory, _ := o.memoryLimit() // validated with the other settings
	cfg := server.DefaultConfig()
	cfg.Limits, cfg.MaxClients, cfg.MaxMemory, cfg.EventLoops = o.limits, o.maxClients, memory, o.eventLoops
	cfg.Users, cfg.ProtectedMode, cfg.IdleTimeout = o.access.users, bool(o.sec.protectedMode), o.idleTimeout()
	cfg.RequestTimeout = o.reqTimeout
	cfg.Version, cfg.Clock, cfg.Debug = version, clock, debug
	if o.configPath != "" {
		cfg.ConfigFile = absPath(o.configPath)
	}
	// The flags were validated, so this holds; checked before the shards
	// start all the same, so that New cannot fail after them.
	if err := cfg.Validate(); err != nil {
		lns.close()
		return err
	}
	// The metrics' port is taken, and raft's measurements caught, before
	// the shards start: a busy port fails the start at once, and the
	// restores of the shards' snapshots are measured.
	obs, err := startObserving(o)
	if err != nil {
		lns.close()
		return err
	}
	if obs.latency != nil {
		cfg.Observer = obs.latency
	}
	shards, raft, mode, err := openShards(o, lns.clientAddr(), clock, log)
	if err != nil {
		lns.close()
		obs.close()
		return err
	}
	cfg.Backups = shards
	if raft != nil {
		cfg.Raft, cfg.DataDir = raft, o.dataDir
		if o.cluster != "" || o.join != "" {
			cfg.Cluster, cfg.ClusterChanges = raft, raft
		}
	} else {
		cfg.AnswersInSubmit = true // memory shards answer within Submit
	}
	srv, err := server.New(cfg, shards)
	if err != nil {
		lns.close()
		obs.close()
		shards.Close()
		return err
	}
	// The collector's pace follows what it must scan, not the keys (see
	// gcpacer), for as long as the server serves.
	paced := make(chan struct{})
	defer close(paced)
	go gcpacer.Run(gcpacer.Config{Percent: o.gcPercent}, paced)
	served := make(chan error, 3)
	var front *rlsFront // nil without --grpc-port
	if lns.grpc != nil {
		front = startRLS(o, lns.grpc, shards, clock, log, served)
	}
	m, err := obs.serve(o, shards, raft, srv, front, log)
	if err != nil {
		lns.close()
		front.close()
		shards.Close()
		return err
	}
	// Catch the signals before saying ready: a SIGTERM right after the ready
	// line must stop the server in order, not kill it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logAccess(log, o)
	ready := []any{"version", version, "addr", lns.clientAddr()}
	if lns.tls != nil {
		ready = append(ready, "tls_addr", lns.tls.Addr().String())
	}
	if lns.grpc != nil {
		ready = append(ready, "grpc_addr", lns.grpc.Addr().String())
	}
	log.Info("rlserver ready", append(ready, "shards", shards.Shards(), "mode", mode, "debug", o.debug)...)
	if lns.plain != nil {
		go func() { served <- srv.Serve(lns.plain) }()
	}
	if lns.tls != nil {
		go func() { served <- srv.ServeTLS(lns.tls, o.access.clientTLS) }()
	}
	var halted <-chan error // nil in memory: never ready
	if raft != nil {
		halted = raft.Halted()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-served:
		log.Error("listener failed", "err", err)
	case err = <-halted:
		// Stop at once, as a crash would: closing in order would snapshot
		// a state that skipped the entry. On restart the node replays its
		// log and stops here again, until it is upgraded; a node the
		// cluster removed refuses to start again.
		log.Error("stopping: this node cannot go on", "err", err)
		return err
	}
	if m != nil {
		m.Stopping()
	}
	front.close() // its calls in progress still reach the shards
	srv.Close()
	if cerr := shards.Close(); cerr != nil {
		log.Error("closing shards", "err", cerr)
		err = errors.Join(err, cerr)
	}
	if m != nil {
		m.Close()
	}
	log.Info("stopped")
	return err
}

// raftSettings is the shard layer's configuration for a durable node: its
// members, its data directory (created with its identity, or checked
// against it), and the settings. rlserver restore prepares a data directory
// with it too, so that the node then starts as from any other.
func raftSettings(o options, clientAddr string, clock cluster.Clock, log *slog.Logger) (cluster.RaftConfig, error) {
	have, _, err := persistence.ReadIdentity(o.dataDir)
	if err != nil {
		return cluster.RaftConfig{}, err
	}
	self, members, err := o.members(clientAddr, have.Initial)
	if err != nil {
		return cluster.RaftConfig{}, err
	}
	if len(have.Initial) > 0 && o.cluster != "" && o.cluster != strings.Join(have.Initial, ",") {
		if flagMembers, err := o.clusterMembers(); err == nil && !sameMembers(flagMembers, members) {
			log.Warn("--cluster differs from the members this data directory was created with; it is read only when a data directory is created: "+
				"the cluster's catalogue says who the members are now (add nodes with --join, remove them with CLUSTER FORGET)", "cluster", o.cluster)
		}
	}
	want := persistence.Identity{NodeID: self.ID, Shards: o.shards}
	if o.join == "" {
		want.Members, want.Initial = cluster.MemberList(members), initialList(members)
	}
	opened, err := persistence.Open(o.dataDir, want)
	if err != nil {
		return cluster.RaftConfig{}, identityInFlags(err)
	}
	cfg := cluster.DefaultRaftConfig(self, members)
	cfg.Shards, cfg.Layout, cfg.Clock, cfg.BusTLS = o.shards, opened.Layout, clock, o.access.busTLS
	cfg.Incarnation, cfg.Upgraded, cfg.ReplaceDeadAfter = opened.Identity.Incarnation, opened.Upgraded, o.replaceDead
	cfg.Log = log
	cfg.LogStore = o.raftLogStore()
	cfg.RequestTimeout = o.reqTimeout
	if o.join != "" {
		if cfg.Join, err = o.joinBus(); err != nil {
			return cluster.RaftConfig{}, err
		}
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = cluster.DefaultClusterHeartbeat, cluster.DefaultClusterHeartbeat
	}
	if o.heartbeat != 0 { // --raft-heartbeat is both timeouts
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = o.heartbeat, o.heartbeat
	}
	return cfg, nil
}

// openShards starts the shard layer --in-memory, --data-dir and --cluster ask
// for, and names the mode for the log. raft is nil in memory. hashicorp/raft
// logs into log too, at the levels cluster gives its records.
func openShards(o options, clientAddr string, clock cluster.Clock, log *slog.Logger) (shards backend, raft *cluster.RaftShards, mode string, err error) {
	scripts := newScripts(log)
	if o.inMemory {
		cfg := cluster.DefaultMemoryConfig()
		cfg.Shards, cfg.Clock, cfg.Scripts = o.shards, clock, scripts
		m, err := cluster.NewMemoryShards(cfg)
		if err != nil {
			return nil, nil, "", err
		}
		return m, nil, "in-memory", nil
	}
	cfg, err := raftSettings(o, clientAddr, clock, log)
	if err != nil {
		return nil, nil, "", err
	}
	cfg.Scripts = scripts
	self, members := cfg.Self, cfg.Members
	mode = "durable single node (" + o.dataDir + ")"
	if len(members) > 1 || o.join != "" {
		listen := self.Bus
		if o.busListen != "" {
			listen = o.busListen
		}
		if cfg.Bus, err = net.Listen("tcp", listen); err != nil {
			return nil, nil, "", fmt.Errorf("bus port: %w", err)
		}
		mode = fmt.Sprintf("cluster node %s (%s), bus %s", self.ID, o.dataDir, self.Bus)
		if listen != self.Bus {
			mode += " listening on " + listen
		}
	}
	raft, err = cluster.StartRaft(cfg)
	if err != nil {
		if cfg.Bus != nil {
			cfg.Bus.Close()
		}
		return nil, nil, "", err
	}
	return raft, raft, mode, nil
}

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
