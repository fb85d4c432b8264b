package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// RaftShards runs this node's replicas of the shards, each a Raft group, and
// routes every request to its shard's leader: the local proposer, or another
// node over the bus. In a cluster it also runs its replica of the
// catalogue group (meta.go), follows the catalogue (replicas.go), and keeps
// the shards it leads (reconcile.go), and when it leads the catalogue the
// whole cluster's placement (driver.go), where the catalogue says.
type RaftShards struct {
	cfg    RaftConfig
	groups []atomic.Pointer[group] // by shard; nil where this node holds no replica
	// foreign are the leaders, learned from their replicas (health.go), of
	// the shards this node holds no replica of.
	foreign []atomic.Pointer[Member]
	// meta is this node's replica of the catalogue group; nil for a single
	// node, whose catalogue never changes.
	meta atomic.Pointer[metaGroup]
	// initial is the catalogue this node starts from, until the catalogue
	// group has committed one: its initial members', or what the member it
	// joined through sent.
	initial atomic.Pointer[Catalogue]
	health  health
	// waiting is the queued move the placement driver holds while its
	// target does not answer, and since when; only the driver's goroutine
	// touches it.
	waiting struct {
		move  Move
		since time.Time
	}
	cluster [8]byte // the cluster's id, on every bus connection
	bus     *bus
	fwd     *forwarder
	// joinDialer opens joining connections (join.go), which carry no
	// cluster id.
	joinDialer busDialer
	stop       chan struct{}
	wg         sync.WaitGroup
	// observer hears of what this node's replicas apply (SetWriteObserver).
	observer observerSlot
	// halted receives the first error that stops the node (Halted).
	halted chan error
	// warnedPeer spaces the warnings about refused nodes.
	warnedPeer atomic.Int64
	// opened is closed once the node has opened its replicas: at once,
	// unless it is a new cluster's node that waits for the others to say
	// it is new.
	opened chan struct{}
	// replicasMu serialises opening and closing replicas.
	replicasMu sync.Mutex

	mu     sync.RWMutex // held for reading while submitting, for writing to close
	closed bool
}

// StartRaft opens this node's shard replicas and starts their groups, after
// checking cfg with Validate. In a cluster it first makes sure the cluster
// will have this node (join.go): it joins through cfg.Join, or, its data
// directory being new, asks the other initial members whether it is new, or,
// restarted, whether it was forgotten. Then it opens the catalogue group and
// the shards the catalogue (or, for a new cluster, the initial placement)
// gives it.
func StartRaft(cfg RaftConfig) (*RaftShards, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &RaftShards{cfg: cfg, stop: make(chan struct{}), halted: make(chan error, 1), opened: make(chan struct{})}
	if !cfg.clustered() {
		return n, n.startSingle()
	}
	if err := n.startCluster(); err != nil {
		n.shutdown(false)
		return nil, err
	}
	return n, nil
}

// startSingle starts a single node: every shard on it, no bus, no
// catalogue group (its catalogue is its initial one, for good).
func (n *RaftShards) startSingle() error {
	n.initial.Store(initialCatalogue(n.cfg.Members, n.cfg.Shards))
	n.fwd = newForwarder(newBusDialer(n.cfg.Dial, fingerprint(n.cfg.Members, n.cfg.Shards), n.cfg.BusTLS), n.forwardFailed)
	n.groups = make([]atomic.Pointer[group], n.cfg.Shards)
	n.foreign = make([]atomic.Pointer[Member], n.cfg.Shards)
	for shard := range n.cfg.Shards {
		if err := n.openReplica(shard, n.cfg.Members, false); err != nil {
			n.shutdown(false)
			return err
		}
	}
	close(n.opened)
	return nil
}

// startCluster starts a cluster node.
func (n *RaftShards) startCluster() error {
	cfg := &n.cfg
	n.joinDialer = newBusDialer(cfg.Dial, [8]byte{}, cfg.BusTLS)
	id, _, err := persistence.ReadIdentity(cfg.Layout.Dir)
	if err != nil {
		return err
	}
	fresh := id.Cluster == "" && !cfg.Upgraded // nothing in the data directory counts yet
	switch {
	case cfg.Join != "" && fresh:
		cat, err := n.join()
		if err != nil {
			return err
		}
		if cfg.Shards != 0 && cfg.Shards != cat.Shards {
			return refused(MemberConflict, "the cluster has %d shards, not --shards %d (the shard count cannot change)", cat.Shards, cfg.Shards)
		}
		cfg.Shards = cat.Shards
		n.initial.Store(cat)
		if n.cluster, err = parseClusterID(cat.Cluster); err != nil {
			return err
		}
	case id.Cluster != "":
		if n.cluster, err = parseClusterID(id.Cluster); err != nil {
			return err
		}
		cfg.Shards = id.Shards
		if len(cfg.Members) > 0 && cfg.Join == "" {
			n.initial.Store(initialCatalogue(cfg.Members, cfg.Shards))
		}
	default:
		n.cluster = fingerprint(cfg.Members, cfg.Shards)
		n.initial.Store(initialCatalogue(cfg.Members, cfg.Shards))
	}
	n.groups = make([]atomic.Pointer[group], cfg.Shards)
	n.foreign = make([]atomic.Pointer[Member], cfg.Shards)
	n.health.start()
	dialer := newBusDialer(cfg.Dial, n.cluster, cfg.BusTLS)
	n.fwd = newForwarder(dialer, n.forwardFailed)
	n.bus = newBus(cfg.Bus, dialer, cfg.BusTLS, cfg.Log, func(c net.Conn) { serveForward(c, n) }, func(c net.Conn) { serveJoining(c, n) })
	n.bus.forwardMux = func(c net.Conn) { serveMux(c, n) }
	go n.bus.serve()

	if fresh && cfg.Join == "" {
		// A new cluster's node waits, serving by forwarding meanwhile,
		// until the other initial members say it is new; it stops if they
		// say the cluster knows it with another data directory.
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := n.checkNewMember(); err != nil {
				if !errors.Is(err, ErrShuttingDown) {
					n.halt(err)
				}
				return
			}
			if err := n.openAndRun(id, true, cfg.Members); err != nil {
				n.halt(err)
			}
		}()
		return nil
	}
	var metaMembers []Member
	switch {
	case cfg.Upgraded:
		n.cfg.Log.Info("upgrading a data directory made by a release without the catalogue: bootstrapping the catalogue from the initial members")
		metaMembers = cfg.Members
	case !fresh:
		// The catalogue's snapshot names the members to ask.
		meta, err := openMeta(cfg, n.transport(catalogueGroup), n.halted, nil)
		if err != nil {
			return err
		}
		n.meta.Store(meta)
		if err := n.checkRestart(); err != nil {
			return err
		}
	}
	return n.openAndRun(id, false, metaMembers)
}

// openAndRun opens the catalogue group (bootstrapped from metaMembers when
// not nil) and this node's replicas (bootstrap: a new cluster's initial
// placement), records the cluster in the data directory's identity id,
// and starts the loops that keep the node in its cluster.
func (n *RaftShards) openAndRun(id persistence.Identity, bootstrap bool, metaMembers []Member) error {
	cfg := &n.cfg
	if n.meta.Load() == nil {
		meta, err := openMeta(cfg, n.transport(catalogueGroup), n.halted, metaMembers)
		if err != nil {
			return err
		}
		n.meta.Store(meta)
	}
	if err := n.openInitialReplicas(bootstrap); err != nil {
		return err
	}
	if id.Cluster == "" || cfg.Upgraded {
		id.Cluster, id.Shards = n.clusterID(), cfg.Shards
		if err := cfg.Layout.WriteIdentity(id); err != nil {
			return err
		}
	}
	for _, loop := range []func(){n.balance, n.pollHealth, n.followCatalogue, n.reconcile, n.drive} {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			loop()
		}()
	}
	close(n.opened)
	return nil
}

// openInitialReplicas opens the replicas this node holds at start: for a
// cluster being created, the initial placement's, bootstrapped; otherwise
// those it has state for, and those the catalogue gives it.
func (n *RaftShards) openInitialReplicas(bootstrap bool) error {
	cat := n.Catalogue()
	for shard := range n.cfg.Shards {
		var err error
		switch {
		case bootstrap:
			if replicas := Replicas(n.cfg.Members, shard); holds(replicas, n.cfg.Self.ID) {
				err = n.openReplica(shard, replicas, false)
			}
		default:
			placed := cat != nil && cat.Placement[shard].involves(n.cfg.Self.ID)
			voter := cat != nil && cat.Index > 0 && containsID(cat.Placement[shard].Voters, n.cfg.Self.ID)
			if placed || n.cfg.Layout.HasShardDir(shard) {
				err = n.openReplica(shard, nil, voter)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseClusterID reads a cluster's id, as the catalogue and the data
// directory write it.
func parseClusterID(s string) (id [8]byte, err error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("a cluster id %q that does not read", s)
	}
	return [8]byte(b), nil
}

// clusterID is the cluster's id as the catalogue writes it.
func (n *RaftShards) clusterID() string { return fmt.Sprintf("%x", n.cluster[:]) }

// transport is a Raft transport for shard's group (catalogueGroup for the
// catalogue's) over the bus, its appends' commit indexes bounded by what
// they verify (verifiedCommits), or in memory for a single node.
func (n *RaftShards) transport(shard int) raft.Transport {
	if n.bus == nil {
		_, t := raft.NewInmemTransport(raft.ServerAddress(n.cfg.Self.Bus))
		return t
	}
	return withVerifiedCommits(raft.NewNetworkTransportWithConfig(transportConfig(n.bus.stream(shard), newRaftLogger(n.cfg.Log, "raft.net"))))
}

// transportConfig is the configuration of a group's Raft transport over
// stream. MaxRPCsInFlight 1 turns hashicorp/raft's pipelined replication
// off: with its default of 2 the pipeline's channels are unbuffered, and
// when a follower answers an append with Success=false (a log that does not
// match, after every change of leader) the pipeline's decoder exits while
// its sender may already be committed to one more send, which then waits
// for good; the follower gets heartbeats and no entries ever again, and the
// group cannot shut down (grafana/pyroscope#5518 describes the same). Each
// append then waits for its answer; entries are batched anyway (up to
// MaxAppendEntries), which is where the throughput comes from.
func transportConfig(stream raft.StreamLayer, log hclog.Logger) *raft.NetworkTransportConfig {
	return &raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, MaxRPCsInFlight: 1,
		Logger: log,
	}
}

func holds(replicas []Member, id string) bool {
	for _, m := range replicas {
		if m.ID == id {
			return true
		}
	}
	return false
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Shards returns the number of shards.
func (n *RaftShards) Shards() int { return n.cfg.Shards }

// ShardOf returns the shard that owns slot.
func (n *RaftShards) ShardOf(slot uint16) int { return ShardOfSlot(slot, n.cfg.Shards) }

// Submit applies r on shard's leader: through this node's proposer when it
// leads the shard, over the bus otherwise. A request that reaches no leader
// (an election, a hand-over, a node going away) is routed again once one is
// known, until its Deadline (set to RequestTimeout from now when zero); Done
// is signalled once, unless r's waiter expires it first. Submit never waits.
func (n *RaftShards) Submit(shard int, r *Request) {
	r.begin(shard, n.reroute, n.cfg.RequestTimeout)
	n.route(r)
}

// route sends r to its shard's leader as this node knows it, or waits for
// one on a goroutine of its own. It never waits itself.
func (n *RaftShards) route(r *Request) {
	leader, ok := n.leaderOf(r.shard)
	switch {
	case !ok:
		if !n.reroute(r) {
			fail(r, retryError(r.shard, "", ErrNotApplied, "no leader was elected in time"))
		}
	case leader.ID == n.cfg.Self.ID:
		n.submitLocal(r.shard, r)
	default:
		n.fwd.forward(leader, r.shard, r)
	}
}

// forwardFailed ends r, which leader did not answer, with err, or routes it
// again when it was not applied; hint names the node leader said leads the
// shard ("" when it named none).
func (n *RaftShards) forwardFailed(r *Request, leader *Member, hint string, err error) {
	if n.groups[r.shard].Load() == nil && notApplied(err) {
		n.relearn(r.shard, leader, hint)
	}
	fail(r, err)
}

// relearn corrects what this node believes leads a shard it holds no
// replica of, after asking (whom) failed: the leader that node named, or
// else the shard's next replica, which will name it.
func (n *RaftShards) relearn(shard int, whom *Member, hint string) {
	if m := n.member(hint); m != nil {
		n.foreign[shard].Store(m)
		return
	}
	cat := n.Catalogue()
	if cat == nil || shard >= len(cat.Placement) {
		return
	}
	replicas := cat.Placement[shard].Replicas()
	for i, id := range replicas {
		if id == whom.ID {
			n.foreign[shard].Store(n.member(replicas[(i+1)%len(replicas)]))
			return
		}
	}
	if len(replicas) > 0 {
		n.foreign[shard].Store(n.member(replicas[0]))
	}
}

// requestTimeout is RaftConfig.RequestTimeout.
func (n *RaftShards) requestTimeout() time.Duration { return n.cfg.RequestTimeout }

// leaderHint names shard's leader when it is another node this node knows.
func (n *RaftShards) leaderHint(shard int) string {
	if shard < 0 || shard >= len(n.groups) {
		return ""
	}
	if g := n.groups[shard].Load(); g != nil {
		if m := g.leader.Load(); m != nil && m.ID != n.cfg.Self.ID {
			return m.ID
		}
	}
	if m := n.foreign[shard].Load(); m != nil && m.ID != n.cfg.Self.ID {
		return m.ID
	}
	return ""
}

// reroute takes back a request that was not applied and routes it again,
// on a goroutine of its own, once the shard's leadership has moved (or a
// moment has passed, for a shard this node holds no replica of, whose
// leader it learns by asking); it declines once the request's deadline has
// passed or the node is closing.
func (n *RaftShards) reroute(r *Request) bool {
	if !time.Now().Before(r.deadline) || n.isClosed() {
		return false
	}
	go func() {
		// Wait for the leadership to change: as long as the request may
		// when no leader is known; a moment when one is (it did not apply
		// the request: it stepped down, or has not heard it lost) or when
		// this node holds no replica of the shard to watch.
		wait := min(rerouteRetry, time.Until(r.deadline))
		var change <-chan struct{}
		if g := n.groups[r.shard].Load(); g != nil {
			change = g.changed() // before looking at the leader: no change is missed
			if g.leader.Load() == nil {
				wait = time.Until(r.deadline)
			}
		}
		pause := time.NewTimer(max(wait, 0))
		defer pause.Stop()
		select {
		case <-change:
		case <-pause.C:
		case <-n.stop:
		}
		n.route(r)
	}()
	return true
}

// rerouteRetry is how long a request that a known leader did not apply
// waits before it is routed again: long enough for the leadership to move,
// short against an election.
const rerouteRetry = 50 * time.Millisecond

func (n *RaftShards) isClosed() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.closed
}

// leaderOf returns the shard's leader as this node knows it, false during
// an election. For a shard this node holds no replica of, it is the leader
// its replicas last named, or the preferred leader until they have.
func (n *RaftShards) leaderOf(shard int) (*Member, bool) {
	g := n.groups[shard].Load()
	if g == nil {
		if m := n.foreign[shard].Load(); m != nil {
			return m, true
		}
		cat := n.Catalogue()
		if cat == nil {
			return nil, false
		}
		m := n.member(cat.Placement[shard].Preferred())
		return m, m != nil
	}
	m := g.leader.Load()
	return m, m != nil
}

// member returns the member with id, or nil.
func (n *RaftShards) member(id string) *Member {
	if id == "" {
		return nil
	}
	if id == n.cfg.Self.ID {
		return &n.cfg.Self
	}
	if cat := n.Catalogue(); cat != nil {
		if node := cat.Node(id); node != nil {
			return &node.Member
		}
	}
	return nil
}

// submitLocal queues r on this node's proposer for shard, failing it with
// ErrNotApplied when this node does not lead the shard.
func (n *RaftShards) submitLocal(shard int, r *Request) {
	n.mu.RLock()
	var g *group
	if shard >= 0 && shard < len(n.groups) {
		g = n.groups[shard].Load()
	}
	var err error
	switch {
	case n.closed:
		err = ErrShuttingDown
	case g == nil || g.raft.State() != raft.Leader:
		err = retryError(shard, "", ErrNotApplied, "this node does not lead it")
	default:
		g.prop.in <- r
		n.mu.RUnlock()
		return
	}
	n.mu.RUnlock() // not held while failing: a re-route takes it
	fail(r, err)
}

// status describes this node's replicas for peers, and what the cluster
// thinks of asker, as this node knows it.
func (n *RaftShards) status(asker, incarnation string) nodeStatus {
	st := nodeStatus{shards: make([]shardStatus, len(n.groups)), incarnation: n.cfg.Incarnation}
	for i := range n.groups {
		g := n.groups[i].Load()
		if g == nil {
			continue
		}
		st.shards[i] = shardStatus{applied: g.raft.AppliedIndex(), commit: g.raft.CommitIndex(), held: true}
		if m := g.leader.Load(); m != nil {
			st.shards[i].leader = m.ID
		}
	}
	if c := n.committedCatalogue(); c != nil {
		st.catalogue = c.Index
		if asker != "" {
			st.verdict = c.admits(asker, incarnation)
		}
	}
	return st
}

// committedCatalogue is the catalogue the catalogue group has committed,
// nil before it has (or for a single node).
func (n *RaftShards) committedCatalogue() *Catalogue {
	m := n.meta.Load()
	if m == nil {
		return nil
	}
	return m.fsm.cur.Load()
}

// Stats returns the counters of this node's replica of shard (zero when it
// holds none).
func (n *RaftShards) Stats(shard int) engine.Stats {
	if g := n.groups[shard].Load(); g != nil {
		return g.fsm.stats()
	}
	return engine.Stats{}
}

// Read answers a read-only shard-wide command (DBSIZE, SCAN, DEBUG DIGEST)
// from this node's replica, which may trail the leader by the entries in
// flight; for a shard it holds no replica of, through the shard's leader.
func (n *RaftShards) Read(shard int, cmd engine.Command) (engine.Result, error) {
	if g := n.groups[shard].Load(); g != nil {
		return g.fsm.inspect(cmd), nil
	}
	res, err := Do(context.Background(), n, shard, cmd)
	if err != nil {
		return engine.Result{}, err
	}
	return res[0], nil
}

// Halted reports, once, that the node must stop at once, without the
// snapshot Close would take: a replica met an entry only a newer rlserver
// can apply (ErrNewerEntry: upgrade it), or the cluster removed this node
// (ErrRemoved) or knows its id with another data directory
// (ErrIncarnation).
func (n *RaftShards) Halted() <-chan error { return n.halted }

// halt reports err on Halted, unless another error was reported first.
func (n *RaftShards) halt(err error) {
	select {
	case n.halted <- err:
	default:
	}
}

// Close stops the node in order: no new requests, leadership handed over,
// a snapshot of every shard, then Raft and the stores closed.
func (n *RaftShards) Close() error {
	return n.shutdown(true)
}

func (n *RaftShards) shutdown(handOver bool) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	n.wg.Wait()
	n.replicasMu.Lock()
	defer n.replicasMu.Unlock()
	// The groups, the catalogue's too, are closed side by side: each may
	// wait for a leadership hand-over, a snapshot and Raft's goroutines (up
	// to raftShutdownBound), and with peers that do not answer, one after
	// the other those waits add up to more than a service manager grants a
	// stopping process.
	errs := make([]error, len(n.groups))
	var closing sync.WaitGroup
	for i := range n.groups {
		if g := n.groups[i].Load(); g != nil {
			closing.Go(func() {
				if err := g.close(handOver, true, n.cfg.Log); err != nil {
					errs[i] = fmt.Errorf("shard %d: %w", g.shard, err)
				}
			})
		}
	}
	if m := n.meta.Load(); m != nil {
		closing.Go(func() {
			if err := m.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
				n.cfg.Log.Debug("catalogue snapshot at shutdown", "err", err)
			}
			m.close(n.cfg.Log)
		})
	}
	closing.Wait()
	if n.bus != nil {
		n.bus.close()
	}
	if n.fwd != nil {
		n.fwd.close()
	}
	return errors.Join(errs...)
}
