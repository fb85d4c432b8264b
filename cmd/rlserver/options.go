package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
	"github.com/rlserver/rlserver/server"
)

// options are rlserver's settings, from the command line, the environment
// and the config file (see config.go).
type options struct {
	bind        string
	port        int
	inMemory    bool
	dataDir     string
	nodeID      string
	cluster     string
	join        string
	announce    string
	busListen   string
	replaceDead time.Duration
	raftLog     string // --raft-log-store as given; raftLogStore parses it
	raftJournal bool   // --raft-journal
	shards      int
	debug       bool
	requirePass string
	maxClients  int
	eventLoops  int
	maxMemory   string // --maxmemory as given; memoryLimit parses it
	memPolicy   string
	limits      server.Limits
	heartbeat   time.Duration
	// snapInterval and snapThreshold pace Raft's snapshots (0: the
	// defaults).
	snapInterval  time.Duration
	snapThreshold uint64
	// snapLogPercent holds a large shard's snapshot until its log has
	// grown by that share of it (cluster.RaftConfig.SnapshotLogPercent).
	snapLogPercent uint64
	snapNice       int // the encoder's priority (cluster.RaftConfig.SnapshotNice)
	reqTimeout     time.Duration
	pprof          string
	metricsPort    int
	httpPort       int   // the decision API over HTTP (httpapi.go)
	statusPage     yesNo // serve the status page beside the metrics
	logLevel       string
	logFormat      string
	logOutput      string // --log-output: stdout or stderr
	configPath     string // the config file, "" for none
	version        bool
	fleet          fleet       // how the node takes part in a fleet (fleet.go)
	sec            security    // access: users, protected mode, TLS, timeout
	access         access      // what sec loads, once validated
	rls            rlsSettings // Envoy's rate limit service (rls.go)
	checks         checks      // the clock and disk checks' bounds (checks.go)
	fed            fedSettings // the federation of regions (federation.go)
	// ratelimitIgnored are envoyproxy/ratelimit's variables set in the
	// environment that set nothing here (ratelimitenv.go), for the log.
	ratelimitIgnored []string
	// gcPercent is false when GOGC is set in the environment: the
	// operator paces the collector, and gcpacer only returns idle memory.
	gcPercent bool
}

// parseFlags parses the command line args, then the environment
// (lookupEnv) and the config file for what the command line does not set,
// and validates the result. Errors about a setting are *settingError.
func parseFlags(args []string, stderr io.Writer, lookupEnv func(string) (string, bool)) (o options, err error) {
	fs := flag.NewFlagSet("rlserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.addFlags(fs)
	if err = fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.version {
		return o, nil // nothing else is read: --version works whatever the settings
	}
	if o.configPath == "" {
		o.configPath, _ = lookupEnv(envName("config"))
	}
	if v, ok := lookupEnv("GOGC"); !ok || v == "" {
		o.gcPercent = true
	}
	compat, ignored, err := ratelimitEnv(lookupEnv)
	if err != nil {
		return o, err
	}
	o.ratelimitIgnored = ignored
	sources, err := layers(fs, lookupEnv, compat, o.configPath)
	if err != nil {
		return o, err
	}
	// Name the setting at fault where its value came from.
	defer func() {
		var se *settingError
		if errors.As(err, &se) && se.source == "" {
			se.source = sources[se.name]
		}
	}()
	if _, ok := sources["data-dir"]; ok && o.inMemory {
		return o, invalid("data-dir", "--in-memory and --data-dir exclude each other")
	}
	if _, ok := sources["shards"]; !ok {
		if o.shards, err = o.defaultShards(); err != nil {
			return o, err
		}
	}
	if _, ok := sources["event-loops"]; !ok && server.EventLoopsSupported {
		o.eventLoops = halfTheCPUs()
	}
	if err = o.validate(); err != nil {
		return o, err
	}
	if err = o.validateHTTP(); err != nil {
		return o, err
	}
	if err = o.validateRLS(sources); err != nil {
		return o, err
	}
	if o.access, err = o.loadAccess(); err != nil {
		return o, err
	}
	return o, o.validateFederation()
}

// addFlags declares every setting on fs, with its default and its help.
func (o *options) addFlags(fs *flag.FlagSet) {
	defaults := server.DefaultConfig()
	fs.StringVar(&o.bind, "bind", "127.0.0.1", "address to listen on for clients")
	fs.IntVar(&o.port, "port", 6380, "TCP port for clients (0: any free port, logged at start)")
	fs.BoolVar(&o.inMemory, "in-memory", false, "keep all state in memory only: no files, nothing survives a restart")
	fs.StringVar(&o.dataDir, "data-dir", "rlserver-data", "directory for durable state (Raft logs and snapshots)")
	fs.StringVar(&o.nodeID, "node-id", "n1", "this node's id; in a cluster, its name in --cluster")
	fs.StringVar(&o.cluster, "cluster", "", "every node of the cluster: id@host:port[@busport],... (client addresses; the bus defaults to port+10000)")
	fs.StringVar(&o.join, "join", "", "join an existing cluster through one of its members, host:port[@busport] (its client address; the bus defaults to port+10000); read when the data dir is new")
	fs.StringVar(&o.announce, "announce", "", "with --join: the address clients and nodes reach this node at, host:port[@busport] (default: --bind and --port, the bus at port+10000)")
	fs.DurationVar(&o.replaceDead, "replace-dead-after", 0, "in a cluster of more than three nodes, re-create elsewhere the replicas of a node down for this long (0: never; CLUSTER FORGET ... FORCE does it by hand)")
	fs.StringVar(&o.busListen, "bus-listen", "", "listen for the cluster bus on this host:port instead of this node's bus address in --cluster, which the other nodes keep dialling (behind NAT, a port mapping or a proxy)")
	fs.IntVar(&o.shards, "shards", 0, "number of shards (single-threaded partitions of the keyspace), 1 to 1024, fixed for the cluster's life (default: what the data dir was created with; for a new cluster, one per --cluster member; with --join, the cluster's; half the CPUs for a single node)")
	fs.BoolVar(&o.debug, "enable-debug-command", false, "allow DEBUG CLOCK, DEBUG DISK, DEBUG DIGEST and DEBUG DIGEST-SHARDS (for tests)")
	fs.StringVar(&o.requirePass, "requirepass", "", "password clients must give with AUTH or HELLO AUTH")
	fs.IntVar(&o.maxClients, "maxclients", defaults.MaxClients, "maximum number of client connections")
	fs.IntVar(&o.eventLoops, "event-loops", 0, "threads that serve plain TCP connections as event loops, as Redis's one thread does; 0: a goroutine per connection (default: half the CPUs on Linux, else 0; TLS connections always have a goroutine)")
	fs.StringVar(&o.maxMemory, "maxmemory", "0", "bytes the keys may hold, over all shards (units k, kb, m, mb, g, gb; 0: no limit); see --maxmemory-policy")
	fs.StringVar(&o.memPolicy, "maxmemory-policy", "noeviction", "at --maxmemory, a command that would create a key is refused with -OOM (noeviction), or the keys nearest to their reset are evicted (volatile-ttl)")
	fs.Int64Var(&o.limits.MaxBulkLen, "max-bulk-len", defaults.Limits.MaxBulkLen, "maximum bytes in one argument")
	fs.Int64Var(&o.limits.MaxArgs, "max-args", defaults.Limits.MaxArgs, "maximum arguments in one command")
	fs.Int64Var(&o.limits.MaxRequestLen, "max-request-len", defaults.Limits.MaxRequestLen, "maximum bytes in one command")
	fs.IntVar(&o.limits.MaxKeyLen, "max-key-len", defaults.Limits.MaxKeyLen, "maximum bytes in one key")
	fs.DurationVar(&o.heartbeat, "raft-heartbeat", 0, "Raft heartbeat and election timeout (default 500ms in a cluster, 100ms for a single node)")
	fs.DurationVar(&o.snapInterval, "raft-snapshot-interval", 0, "how often each shard checks whether to snapshot its state, 10ms to 1h: Raft waits one to two intervals between checks (default 5s)")
	fs.Uint64Var(&o.snapThreshold, "raft-snapshot-threshold", 0, "entries a shard writes after a snapshot before it takes the next (default 4096)")
	fs.Uint64Var(&o.snapLogPercent, "raft-snapshot-log-percentage", cluster.DefaultSnapshotLogPercent,
		"and the percentage of the last snapshot's size its log must grow by, as Redis's auto-aof-rewrite-percentage: a large shard then writes its state less often, 0 to 10000 (0: every --raft-snapshot-threshold entries)")
	fs.IntVar(&o.snapNice, "snapshot-nice", cluster.DefaultSnapshotNice, "scheduling priority (nice, 1 to 19) of the thread that encodes a shard's snapshot or backup, which gets a processor of its own meanwhile; 0: encode it as any other work")
	fs.StringVar(&o.raftLog, "raft-log-store", persistence.DefaultLogFormat.String(), "format of the Raft logs a new data directory gets: wal (one fsync an append) or bolt (bbolt, two; every release before 0.2's format); an existing log keeps its own")
	fs.BoolVar(&o.raftJournal, "raft-journal", false, "sync the shards' WAL appends through one journal for the node, so that appends that coincide, whichever shards they are for, share one fsync (each WAL is synced every few seconds); off: each append is synced on its own")
	fs.DurationVar(&o.reqTimeout, "request-timeout", defaults.RequestTimeout, "answer every command within this long, when its shard cannot (an election, a leader that died or froze) with TRYAGAIN if nothing was counted and UNCERTAIN if it may have been; 10ms to 1m")
	fs.StringVar(&o.pprof, "pprof", "", "serve Go's net/http/pprof profiles on this address (e.g. 127.0.0.1:6060); off by default")
	fs.IntVar(&o.metricsPort, "metrics-port", 0, "serve Prometheus /metrics, /healthz and /readyz over HTTP on this port of --bind (0: off)")
	o.statusPage = true
	fs.Var(&o.statusPage, "status-page", "with --metrics-port, also serve the status page at / and /status.json: yes or no")
	fs.StringVar(&o.logLevel, "log-level", "info", "least severe log level written: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text (key=value) or json (one object a line)")
	fs.StringVar(&o.logOutput, "log-output", "stderr", "where the log goes: stderr or stdout (a container's image sets stdout); errors that stop the start go to stderr")
	fs.StringVar(&o.configPath, "config", "", "read settings from this file, one \"name value\" a line (also RLSERVER_CONFIG; flags and RLSERVER_<NAME> variables take precedence)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	o.fleet.addFlags(fs)
	o.sec.addFlags(fs)
	o.rls.addFlags(fs)
	o.checks.addFlags(fs)
	o.fed.addFlags(fs)
	o.addHTTPFlags(fs)
}

// halfTheCPUs is the default of both --shards on a single node and
// --event-loops in memory: each answers on a thread of its own, so one would
// cap a large machine at one core's worth of decisions, and the other half
// is left to the connections, the clients beside the server and the
// runtime. On two cores one of each measured fastest (the loops:
// docs/performance.md, sixth round; the shards: defaultShards).
func halfTheCPUs() int { return max(1, runtime.NumCPU()/2) }

// defaultShards is the shard count when --shards is not given: the one an
// existing data directory was created with (it cannot change); for a new
// cluster one per member, the count that decides fastest while the cluster
// keeps its size (one that will grow is given --shards for its largest
// size: docs/cluster.md weighs what each shard costs); 0 for a node that
// joins, which takes its cluster's (with --cluster too, placement gives it
// one per member if it finds the cluster is new); for a single node half
// the CPUs. On a
// two-core machine one durable shard measured fastest: every shard costs
// CPU per entry and splits pipelines into smaller batches.
func (o options) defaultShards() (int, error) {
	if !o.inMemory {
		id, ok, err := persistence.ReadIdentity(o.dataDir)
		if err != nil {
			return 0, err
		}
		if ok && id.Shards != 0 {
			return id.Shards, nil
		}
	}
	switch {
	case o.join != "":
		return 0, nil
	case o.cluster != "":
		members, err := o.clusterMembers()
		if err != nil {
			return 0, err
		}
		return len(members), nil
	}
	return halfTheCPUs(), nil
}

// clusterMembers parses --cluster; an error names the flag.
func (o options) clusterMembers() ([]cluster.Member, error) {
	members, err := cluster.ParseMembers(o.cluster)
	if err != nil {
		return nil, &settingError{name: "cluster", msg: "--cluster: " + err.Error(), err: err}
	}
	return members, nil
}

// identityFlags are the flags that set the fields of a data directory's
// identity (persistence.Identity); no flag sets its format.
var identityFlags = map[persistence.IdentityField]string{
	persistence.FieldNodeID:  "node-id",
	persistence.FieldShards:  "shards",
	persistence.FieldMembers: "cluster",
}

// identityInFlags words a data directory that was created with other
// settings with the flag that differs: "... holds 4 shards, not --shards 8".
func identityInFlags(err error) error {
	var ie *persistence.IdentityError
	if !errors.As(err, &ie) {
		return err
	}
	flag, ok := identityFlags[ie.Field]
	if !ok {
		return err
	}
	msg := ie.Explain(func(f persistence.IdentityField) string { return "--" + identityFlags[f] })
	return &settingError{name: flag, msg: msg, err: err}
}

// validate names the setting at fault.
func (o options) validate() error {
	switch {
	case o.port < 0 || o.port > 65535:
		return invalid("port", "--port %d: must be from 0 to 65535", o.port)
	case (o.shards < 1 && !(o.shards == 0 && o.join != "")) || o.shards > cluster.MaxShards:
		return invalid("shards", "--shards %d: must be from 1 to %d", o.shards, cluster.MaxShards)
	case o.maxClients < 1:
		return invalid("maxclients", "--maxclients %d: must be at least 1", o.maxClients)
	case o.eventLoops < 0 || o.eventLoops > 1024:
		return invalid("event-loops", "--event-loops %d: must be from 0 to 1024", o.eventLoops)
	case o.eventLoops > 0 && !server.EventLoopsSupported:
		return invalid("event-loops", "--event-loops needs Linux's epoll: set it to 0")
	case o.limits.MaxBulkLen < 1 || o.limits.MaxBulkLen > 1<<30:
		return invalid("max-bulk-len", "--max-bulk-len %d: must be from 1 to %d (1 GiB)", o.limits.MaxBulkLen, 1<<30)
	case o.limits.MaxArgs < 1 || o.limits.MaxArgs > 1<<20:
		return invalid("max-args", "--max-args %d: must be from 1 to %d", o.limits.MaxArgs, 1<<20)
	case o.limits.MaxRequestLen < 16 || o.limits.MaxRequestLen > 1<<32:
		return invalid("max-request-len", "--max-request-len %d: must be from 16 to %d (4 GiB)", o.limits.MaxRequestLen, int64(1)<<32)
	case o.limits.MaxKeyLen < 1 || o.limits.MaxKeyLen > 1<<20:
		return invalid("max-key-len", "--max-key-len %d: must be from 1 to %d", o.limits.MaxKeyLen, 1<<20)
	case o.heartbeat != 0 && (o.heartbeat < 10*time.Millisecond || o.heartbeat > time.Minute):
		return invalid("raft-heartbeat", "--raft-heartbeat %v: must be from 10ms to 1m", o.heartbeat)
	case o.snapInterval != 0 && (o.snapInterval < 10*time.Millisecond || o.snapInterval > time.Hour):
		return invalid("raft-snapshot-interval", "--raft-snapshot-interval %v: must be from 10ms to 1h", o.snapInterval)
	case o.snapLogPercent > cluster.MaxSnapshotLogPercent:
		return invalid("raft-snapshot-log-percentage", "--raft-snapshot-log-percentage %d: must be from 0 to %d", o.snapLogPercent, cluster.MaxSnapshotLogPercent)
	case o.snapNice < 0 || o.snapNice > cluster.MaxSnapshotNice:
		return invalid("snapshot-nice", "--snapshot-nice %d: must be from 0 to %d", o.snapNice, cluster.MaxSnapshotNice)
	case o.reqTimeout < 10*time.Millisecond || o.reqTimeout > time.Minute:
		return invalid("request-timeout", "--request-timeout %v: must be from 10ms to 1m", o.reqTimeout)
	case o.nodeID == "":
		return invalid("node-id", "--node-id: must not be empty")
	case o.inMemory && o.cluster != "":
		return invalid("cluster", "--cluster needs durable state: drop --in-memory")
	case o.inMemory && o.join != "":
		return invalid("join", "--join needs durable state: drop --in-memory")
	case o.inMemory && o.raftJournal:
		return invalid("raft-journal", "--raft-journal needs durable state: drop --in-memory")
	case o.busListen != "" && o.cluster == "" && o.join == "":
		return invalid("bus-listen", "--bus-listen needs --cluster or --join: a single node has no bus")
	case o.announce != "" && o.join == "":
		return invalid("announce", "--announce needs --join: with --cluster alone, the list says where each node is")
	case o.replaceDead < 0 || (o.replaceDead > 0 && o.cluster == "" && o.join == ""):
		return invalid("replace-dead-after", "--replace-dead-after %v: must be 0, or positive in a cluster", o.replaceDead)
	case o.dataDir == "" && !o.inMemory:
		return invalid("data-dir", "--data-dir: must not be empty")
	case !validLogStore(o.raftLog):
		return invalid("raft-log-store", "--raft-log-store %q: must be wal or bolt", o.raftLog)
	case o.metricsPort < 0 || o.metricsPort > 65535:
		return invalid("metrics-port", "--metrics-port %d: must be from 1 to 65535, or 0 for off", o.metricsPort)
	case o.metricsPort != 0 && o.metricsPort == o.port:
		return invalid("metrics-port", "--metrics-port %d: is the client --port", o.metricsPort)
	}
	if _, err := o.memoryLimit(); err != nil {
		return err
	}
	if err := o.validateFleet(); err != nil {
		return err
	}
	if err := o.validateSecurity(); err != nil {
		return err
	}
	if err := o.validateChecks(); err != nil {
		return err
	}
	if _, err := parseLogLevel(o.logLevel); err != nil {
		return invalid("log-level", "--log-level %q: must be debug, info, warn or error", o.logLevel)
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return invalid("log-format", "--log-format %q: must be text or json", o.logFormat)
	}
	if o.logOutput != "stderr" && o.logOutput != "stdout" {
		return invalid("log-output", "--log-output %q: must be stderr or stdout", o.logOutput)
	}
	return nil
}

// memoryLimit is --maxmemory and --maxmemory-policy.
func (o options) memoryLimit() (server.MemoryLimit, error) {
	bytes, err := server.ParseMemorySize(o.maxMemory)
	if err != nil {
		return server.MemoryLimit{}, invalid("maxmemory", "--maxmemory %q: %v", o.maxMemory, err)
	}
	policy, err := server.ParseMemoryPolicy(o.memPolicy)
	if err != nil {
		return server.MemoryLimit{}, invalid("maxmemory-policy", "--maxmemory-policy: %v", err)
	}
	return server.MemoryLimit{Bytes: bytes, Policy: policy}, nil
}

// plainPort reports whether clients are served without TLS: always, but
// for --port 0 beside a --tls-port, which means TLS only, as in Redis (on
// its own, --port 0 picks a free port).
func (o options) plainPort() bool {
	return o.port != 0 || o.sec.tlsPort == 0
}

// clientPort is the port clients are told of (CLUSTER SLOTS, MOVED): the
// plain one, or the TLS one when there is no plain one.
func (o options) clientPort() int {
	if o.plainPort() {
		return o.port
	}
	return o.sec.tlsPort
}

// members returns the cluster's initial members and this node's entry: the
// parsed --cluster (or, once the data directory exists, the list it was
// created with: initial), whose entry for --node-id must be where this node
// listens; for a node that joins (--join alone, or a node --cluster does
// not list, or that joined before: joined), itself as --announce says and
// no initial members; or this node alone.
func (o options) members(clientAddr string, initial []string, joined bool) (self cluster.Member, all []cluster.Member, err error) {
	switch {
	case o.join != "" && (o.cluster == "" || joined):
		self, err = o.announced(clientAddr)
		return self, nil, err
	case o.cluster == "":
		self = cluster.Member{ID: o.nodeID, Client: clientAddr, Bus: "local"}
		return self, []cluster.Member{self}, nil
	case len(initial) > 0:
		if all, err = cluster.ParseMembers(strings.Join(initial, ",")); err != nil {
			return self, nil, fmt.Errorf("the data directory's initial members: %w", err)
		}
	default:
		if all, err = o.clusterMembers(); err != nil {
			return self, nil, err
		}
	}
	for _, m := range all {
		if m.ID != o.nodeID {
			continue
		}
		if o.announce != "" {
			if a, err := o.announced(clientAddr); err != nil || a != m {
				return self, nil, fmt.Errorf("--announce %s differs from %s's entry in --cluster, %s@%s (%v)", o.announce, m.ID, m.Client, m.Bus, err)
			}
		}
		if _, port, _ := net.SplitHostPort(m.Client); port != strconv.Itoa(o.clientPort()) {
			flag := "--port"
			if !o.plainPort() {
				flag = "--tls-port"
			}
			return self, nil, fmt.Errorf("%s %d differs from %s's address %s in --cluster", flag, o.clientPort(), m.ID, m.Client)
		}
		return m, all, nil
	}
	if o.join != "" { // not one of the cluster's first members: it joins
		self, err = o.announced(clientAddr)
		return self, nil, err
	}
	return self, nil, fmt.Errorf("--node-id %q is not one of the --cluster members", o.nodeID)
}

// announced is this node's entry when it joins: --announce, or --bind and
// the client port, the bus at port+10000.
func (o options) announced(clientAddr string) (cluster.Member, error) {
	spec := o.announce
	if spec == "" {
		host, _, _ := net.SplitHostPort(clientAddr)
		if o.bind != "" && o.bind != "0.0.0.0" && o.bind != "::" {
			host = o.bind
		}
		spec = net.JoinHostPort(host, strconv.Itoa(o.clientPort()))
	}
	m, err := cluster.ParseMembers(o.nodeID + "@" + spec)
	if err != nil {
		return cluster.Member{}, &settingError{name: "announce", msg: "--announce: " + err.Error(), err: err}
	}
	return m[0], nil
}

// joinBus is the bus address of the member --join names.
func (o options) joinBus() (string, error) {
	m, err := cluster.ParseMembers("join@" + o.join)
	if err != nil {
		return "", &settingError{name: "join", msg: "--join: " + err.Error(), err: err}
	}
	return m[0].Bus, nil
}

// validLogStore says whether name is a Raft log store format.
func validLogStore(name string) bool {
	_, err := persistence.ParseLogFormat(name)
	return err == nil
}

// raftLogStore is the format --raft-log-store names (validated).
func (o options) raftLogStore() persistence.LogFormat {
	f, _ := persistence.ParseLogFormat(o.raftLog)
	return f
}
