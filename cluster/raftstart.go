package cluster

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// How a node starts: its single shard, or its place in a cluster (joined,
// new, or restarted), its replicas opened and their Raft groups running on
// the bus's transport.

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
		meta, err := openMeta(cfg, n.stream(catalogueGroup), n.halted, nil)
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
		meta, err := openMeta(cfg, n.stream(catalogueGroup), n.halted, metaMembers)
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

// stream is the bus's stream for shard's group (catalogueGroup for the
// catalogue's), nil for a single node, whose groups need no network.
func (n *RaftShards) stream(shard int) raft.StreamLayer {
	if n.bus == nil {
		return nil
	}
	return n.bus.stream(shard)
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
