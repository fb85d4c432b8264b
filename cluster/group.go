package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster/raftfix"
	"github.com/rlserver/rlserver/persistence"
)

// Group is one shard's Raft group on this node: its Raft instance (with
// raftfix's corrections), its state machine and proposer, and what it knows
// of its leader.
type Group struct {
	shard int
	self  string // this node's id
	dir   string // the group's directory in the data directory
	// electionTimeout bounds how long a hand-over waits for the other
	// node to take the leadership.
	electionTimeout time.Duration
	log             *slog.Logger
	raft            *raftfix.Raft
	fsm             *shardFSM
	prop            *proposer

	// node says whether this node may lead any group (its clock, its
	// disk), disk what the group's own log says of the disk: whether this
	// node may lead the group (Unfit).
	node nodeFitness
	disk *persistence.DiskHealth

	leader atomic.Pointer[Member] // nil while unknown
	load   loadLatch              // whether the replica has loaded its state
	mu     sync.Mutex
	change chan struct{} // closed and replaced when the leader changes
	// moved, when set, is told of every change of leader (from and to are
	// nil while unknown), on the goroutine that watches the group.
	moved func(shard int, from, to *Member)
	// stop ends the goroutines that watch and reconcile the group.
	stop chan struct{}

	// recovered is set while the group's directory holds a recovery's
	// mark (recover.go).
	recovered atomic.Bool
}

// stores are a group's log, stable and snapshot stores.
type stores struct {
	store    persistence.Store // log and stable store
	logs     raft.LogStore     // store's log, checked and cached
	snaps    raft.SnapshotStore
	existing bool                    // they hold Raft state already
	disk     *persistence.DiskHealth // what the log's appends say of the disk; nil unwatched
}

// openStores opens the stores of a group in dir; a new log store is made in
// cfg.LogStore. watched watches the log's appends (persistence.WatchDisk),
// with cfg's threshold and faults, for a group that runs. journaled syncs
// them through the node's journal, when it has one: a shard's group, not
// the catalogue's, whose few appends would gain nothing and which closes
// beside the shards rather than before the journal.
func openStores(dir string, cfg *RaftConfig, watched, journaled bool) (st stores, err error) {
	open := persistence.OpenLogStore
	if journaled && cfg.journal != nil {
		open = cfg.journal.OpenLogStore
	}
	if st.store, err = open(dir, cfg.LogStore, newRaftLogger(cfg.Log, "wal")); err != nil {
		return st, err
	}
	if watched {
		st.store, st.disk = persistence.WatchDisk(st.store, dir, cfg.SlowLogWrite, cfg.DiskFaults)
	}
	defer func() {
		if err != nil {
			st.store.Close()
		}
	}()
	if st.logs, err = raft.NewLogCache(512, persistence.CheckedLogs(st.store)); err != nil {
		return st, err
	}
	if st.snaps, err = persistence.OpenSnapshotStore(dir, newRaftLogger(cfg.Log, "snapshots")); err != nil {
		return st, err
	}
	st.existing, err = raft.HasExistingState(st.logs, st.store, st.snaps)
	return st, err
}

// startGroup starts a group's Raft instance over st, with fsm, named name
// in the log (raft.shard3, raft.catalogue), over stream (nil for a single
// node's group, which needs no network). mayLead says why this node must
// not lead it (nil: it may): it then stays out of elections. It owns st
// and stream from the call on: a failed start closes them. paced: a pacer
// asks for the group's snapshots (snapshotpace.go), so Raft's own trigger
// is off.
func startGroup(cfg *RaftConfig, name string, fsm raft.FSM, st stores, stream raft.StreamLayer, mayLead func() error, paced bool) (*raftfix.Raft, error) {
	rc := raftConfig(cfg, name)
	if paced {
		rc.SnapshotThreshold = math.MaxUint64
	}
	return raftfix.New(raftfix.Config{
		Raft: rc, FSM: fsm,
		Logs: st.logs, Stable: st.store, Snaps: st.snaps,
		Stream: stream, Local: raft.ServerAddress(cfg.Self.Bus), Log: newRaftLogger(cfg.Log, "raft.net"),
		MayLead: mayLead,
	})
}

// nodeFitness is what a group takes from its node to know whether the node
// may lead it (fitness.go).
type nodeFitness struct {
	clock *clockGuard // stamps the group's entries
	// mustNotLead says why the node must not lead any group; nil: only
	// the clock and the group's own log count.
	mustNotLead func() error
}

// openGroup opens a shard's stores and starts its Raft instance. bootstrap,
// when not nil, are the replicas to bootstrap the group with when its
// stores are new (a cluster being created); a group opened without is
// empty until a leader adds it to its configuration and sends it the
// shard. requireState refuses stores that are new: the catalogue counts
// this node among the shard's voters, so the state it lacks held votes.
// node is what it takes from its node (a nil clock: one that never
// compares, so trusts cfg.Clock). It owns stream (nil for a single node)
// from the call on.
func openGroup(cfg *RaftConfig, shard int, bootstrap []Member, requireState bool, stream raft.StreamLayer, observer *observerSlot, halt chan<- error, node nodeFitness) (g *Group, err error) {
	started := false
	defer func() {
		if err != nil && !started && stream != nil {
			stream.Close() // else it stays on the bus, accepting for nobody
		}
	}()
	if node.clock == nil {
		node.clock = newClockGuard(cfg.Clock, cfg.MaxClockOffset, cfg.Log, false)
	}
	g = &Group{
		shard: shard, self: cfg.Self.ID, electionTimeout: cfg.ElectionTimeout, log: cfg.Log, node: node,
		fsm: newShardFSM(shard, observer, halt, cfg.Scripts), change: make(chan struct{}), stop: make(chan struct{}),
	}
	g.fsm.log, g.fsm.snapshotNice = cfg.Log, cfg.SnapshotNice
	dir, err := cfg.Layout.ShardDir(shard)
	if err != nil {
		return nil, err
	}
	g.dir = dir
	st, err := openStores(dir, cfg, true, true)
	if err != nil {
		return nil, fmt.Errorf("shard %d: %w", shard, err)
	}
	g.disk = st.disk
	if requireState && !st.existing {
		st.store.Close()
		return nil, refused(MemberIncarnation, "shard %d: %s holds no Raft state, yet the cluster counts this node among the shard's voters: "+
			"its state, and the votes it cast, are lost; run CLUSTER FORGET %s FORCE on a live node, then start this node as a new one with --join",
			shard, dir, cfg.Self.ID)
	}
	g.recovered.Store(persistence.IsRecovered(dir))
	started = true
	if g.raft, err = startGroup(cfg, fmt.Sprintf("raft.shard%d", shard), g.fsm, st, stream, g.mustNotLead, cfg.SnapshotLogPercent > 0); err != nil {
		return nil, fmt.Errorf("shard %d: %w", shard, err)
	}
	if bootstrap != nil && !st.existing {
		// Every replica bootstraps with the same configuration; Raft makes
		// that safe, and ErrCantBootstrap only means it already was.
		if err := g.raft.BootstrapCluster(voters(bootstrap)).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			g.raft.Close(fmt.Sprintf("shard %d", shard), cfg.Log)
			return nil, fmt.Errorf("shard %d bootstrap: %w", shard, err)
		}
	}
	g.prop = newProposer(shard, cfg.Self.ID, g.raft.Raft, g.fsm, node.clock, stream == nil)
	g.prop.start()
	return g, nil
}

// voters is the configuration a shard's group is bootstrapped with: its
// replicas, all voters (InstallBackup bootstraps with it too).
func voters(replicas []Member) raft.Configuration {
	servers := make([]raft.Server, len(replicas))
	for i, m := range replicas {
		servers[i] = raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Bus)}
	}
	return raft.Configuration{Servers: servers}
}

// raftConfig is hashicorp/raft's configuration for one group; name names
// its records (raft.shard3, raft.catalogue).
func raftConfig(cfg *RaftConfig, name string) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(cfg.Self.ID)
	c.HeartbeatTimeout = cfg.HeartbeatTimeout
	c.ElectionTimeout = cfg.ElectionTimeout
	// The longest lease Raft allows: a leader that cannot reach a quorum for
	// a whole heartbeat timeout steps down, but a busy machine's scheduling
	// delays do not make it churn.
	c.LeaderLeaseTimeout = cfg.HeartbeatTimeout
	// CommitTimeout is how long a follower may wait, once entries stop
	// coming, to learn the leader's commit index and apply the last ones:
	// hashicorp/raft sends an empty AppendEntries that often (1 to 2 times
	// the timeout) to every follower of every group. Under load the commit
	// index rides on each entry's AppendEntries and the timer never fires.
	// Idle, those appends cost a cluster a share of a core that falls as
	// the timeout grows (docs/cluster.md measures it). Nothing waits on a
	// follower's apply: decisions are answered by the leader, and catching
	// up is judged within 64 entries.
	c.CommitTimeout = 100 * time.Millisecond
	// MaxAppendEntries bounds the entries of one AppendEntries (a follower
	// catching up gets them 64 at a time) and sizes a slice hashicorp/raft
	// allocates each time the commit index moves: 8 bytes an entry of it,
	// on every replica, for every entry when each carries a request or two
	// (an open-loop load). At 512 that was 4 KiB an entry and two thirds of
	// what a durable node allocated under such a load; the proposer keeps
	// one entry in flight, so more than 64 never meet in one append under
	// load anyway (docs/performance.md, "The group wait under an open
	// loop").
	c.MaxAppendEntries = 64
	c.BatchApplyCh = true
	c.SnapshotThreshold = cfg.SnapshotThreshold
	c.SnapshotInterval = cfg.SnapshotInterval
	c.TrailingLogs = cfg.TrailingLogs
	c.ShutdownOnRemove = false
	c.Logger = newRaftLogger(cfg.Log, name)
	return c
}

// watch keeps g.leader current: from Raft's leader observations, and by
// polling, since observations can be dropped. member finds a node by id.
func (g *Group) watch(member func(id string) *Member, stop <-chan struct{}) {
	obs := make(chan raft.Observation, 16)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	g.raft.RegisterObserver(observer)
	defer g.raft.DeregisterObserver(observer)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		g.refreshLeader(member)
		select {
		case <-obs:
		case <-tick.C:
		case <-stop:
			return
		case <-g.stop:
			return
		}
	}
}

// refreshLeader reads Raft's current leader and, on a change, wakes the
// requests waiting for one and tells moved, if set.
func (g *Group) refreshLeader(member func(id string) *Member) {
	_, id := g.raft.LeaderWithID()
	var now *Member
	if id != "" {
		now = member(string(id))
	}
	if old := g.leader.Load(); old == now || (old != nil && now != nil && old.ID == now.ID) {
		return
	}
	old := g.leader.Swap(now)
	g.mu.Lock()
	close(g.change)
	g.change = make(chan struct{})
	g.mu.Unlock()
	if g.moved != nil {
		g.moved(g.shard, old, now)
	}
}

// changed returns a channel closed at the next change of leader.
func (g *Group) changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.change
}

// close stops the proposer, hands leadership over if it can, snapshots if
// asked (a replica the node is dropping is not worth one), and shuts Raft
// and the stores down.
func (g *Group) close(handOver, snapshot bool, log *slog.Logger) error {
	close(g.stop)
	g.prop.stop()
	if handOver && g.raft.State() == raft.Leader && len(g.raft.GetConfiguration().Configuration().Servers) > 1 {
		if err := g.raft.LeadershipTransfer().Error(); err != nil {
			log.Warn("leadership hand-over failed; the others will elect", "shard", g.shard, "err", err)
		}
	}
	// A snapshot makes the next start fast; without one the log still holds
	// everything, so a failure is only worth a warning.
	if snapshot {
		if err := g.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			log.Warn("snapshot at shutdown failed", "shard", g.shard, "err", err)
		}
	}
	return g.raft.Close(fmt.Sprintf("shard %d", g.shard), log)
}
