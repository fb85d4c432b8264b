package placement

import (
	"errors"
	"slices"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// Start starts a durable node, after checking cfg with Validate. A single
// node starts its data plane and opens every shard on it. A cluster's node
// first makes sure the cluster will have it (identity.go): it joins through
// cfg.Join, or, its data directory being new, asks the other initial
// members whether it is new, or, restarted, whether it was forgotten. Then
// it opens the catalogue group and the replicas the catalogue (or, for a
// new cluster, the initial placement) gives it, and keeps them as the
// catalogue changes.
func Start(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, stop: make(chan struct{}), opened: make(chan struct{})}
	n.vouchers.layout = cfg.Layout
	if !cfg.clustered() {
		if err := n.startSingle(); err != nil {
			return nil, err
		}
		return n, nil
	}
	if err := n.startCluster(); err != nil {
		n.abandon()
		return nil, err
	}
	return n, nil
}

// startData starts the node's data plane, with this node as its control
// plane.
func (n *Node) startData() error {
	n.cfg.Cluster, n.cfg.Control = n.id, (*controlPlane)(n)
	data, err := cluster.StartRaft(n.cfg.RaftConfig)
	if err != nil {
		return err
	}
	n.data, n.raftShards = data, data
	return nil
}

// startSingle starts a single node: every shard on it, no bus, no
// catalogue group (its catalogue is its initial one, for good).
func (n *Node) startSingle() error {
	n.id = cluster.Fingerprint(n.cfg.Members, n.cfg.Shards)
	n.initial.Store(cluster.InitialCatalogue(n.cfg.Members, n.cfg.Shards))
	if err := n.startData(); err != nil {
		return err
	}
	for shard := range n.cfg.Shards {
		if err := n.data.OpenReplica(shard, n.cfg.Members, false); err != nil {
			n.abandon()
			return err
		}
	}
	close(n.opened)
	return nil
}

// startCluster starts a cluster's node.
func (n *Node) startCluster() error {
	cfg := &n.cfg
	n.joiner = cluster.NewJoiner(cfg.Dial, cfg.BusTLS)
	id, _, err := persistence.ReadIdentity(cfg.Layout.Dir)
	if err != nil {
		return err
	}
	fresh := id.Cluster == "" && !cfg.Upgraded // nothing in the data directory counts yet
	if err := n.identify(id, fresh); err != nil {
		return err
	}
	n.health.start()
	if err := n.startData(); err != nil {
		return err
	}
	if fresh && len(cfg.Members) > 0 {
		// A new cluster's node waits, serving by forwarding meanwhile,
		// until the other initial members say it is new; it stops if they
		// say the cluster knows it with another data directory.
		n.wg.Go(func() {
			if err := n.checkNewMember(); err != nil {
				if !errors.Is(err, cluster.ErrShuttingDown) {
					n.data.Halt(err)
				}
				return
			}
			if err := n.openAndRun(id, true, cfg.Members); err != nil {
				n.data.Halt(err)
			}
		})
		return nil
	}
	var metaMembers []cluster.Member
	switch {
	case cfg.Upgraded:
		n.cfg.Log.Info("upgrading a data directory made by a release without the catalogue: bootstrapping the catalogue from the initial members")
		metaMembers = cfg.Members
	case !fresh:
		// The catalogue's snapshot names the members to ask.
		if err := n.openCatalogueGroup(nil); err != nil {
			return err
		}
		if err := n.checkRestart(); err != nil {
			return err
		}
	}
	return n.openAndRun(id, false, metaMembers)
}

// identify learns the cluster's id, its shard count and the catalogue the
// node starts from: from the member it joins through (a new data directory
// and --join), from its data directory (a restart), or from its initial
// members (a new cluster).
func (n *Node) identify(id persistence.Identity, fresh bool) error {
	cfg := &n.cfg
	var err error
	joins := cfg.Join != "" && fresh && len(cfg.Members) == 0
	shardsGiven := cfg.Shards != 0
	if !shardsGiven && len(cfg.Members) > 0 {
		// Started with --join too, and no --shards: a new cluster has a
		// shard a member, as without --join; one that exists says.
		cfg.Shards = len(cfg.Members)
	}
	if cfg.Join != "" && fresh && len(cfg.Members) > 0 {
		if joins, err = n.existsWithout(cluster.Fingerprint(cfg.Members, cfg.Shards)); err != nil {
			return err
		}
	}
	switch {
	case joins:
		cat, err := n.join()
		if err != nil {
			return err
		}
		// A member of the list it was started with, joined rather than
		// bootstrapped: it restarts as a node that joined.
		cfg.Members = nil
		if shardsGiven && cfg.Shards != cat.Shards {
			return refused(cluster.MemberConflict, "the cluster has %d shards, not --shards %d (the shard count cannot change)", cat.Shards, cfg.Shards)
		}
		cfg.Shards = cat.Shards
		n.initial.Store(cat)
		n.id, err = cluster.ParseClusterID(cat.Cluster)
		return err
	case id.Cluster != "":
		if n.id, err = cluster.ParseClusterID(id.Cluster); err != nil {
			return err
		}
		cfg.Shards = id.Shards
		if len(cfg.Members) > 0 { // one of the initial members: it has their catalogue
			n.initial.Store(cluster.InitialCatalogue(cfg.Members, cfg.Shards))
		}
	default:
		n.id = cluster.Fingerprint(cfg.Members, cfg.Shards)
		n.initial.Store(cluster.InitialCatalogue(cfg.Members, cfg.Shards))
	}
	return nil
}

// openAndRun opens the catalogue group (bootstrapped from metaMembers when
// not nil) and this node's replicas (bootstrap: a new cluster's initial
// placement), records the cluster in the data directory's identity id,
// and starts the loops that keep the node in its cluster.
func (n *Node) openAndRun(id persistence.Identity, bootstrap bool, metaMembers []cluster.Member) error {
	cfg := &n.cfg
	if n.meta.Load() == nil {
		if err := n.openCatalogueGroup(metaMembers); err != nil {
			return err
		}
	}
	if err := n.openInitialReplicas(bootstrap); err != nil {
		return err
	}
	if id.Cluster == "" || cfg.Upgraded {
		id.Cluster, id.Shards = n.id.String(), cfg.Shards
		if len(cfg.Members) == 0 { // it joined: no initial members of its own
			id.Members, id.Initial = nil, nil
		}
		if err := cfg.Layout.WriteIdentity(id); err != nil {
			return err
		}
	}
	for _, loop := range []func(){n.balance, n.pollHealth, n.followCatalogue, n.reconcile, n.drive} {
		n.wg.Go(loop)
	}
	close(n.opened)
	return nil
}

// openInitialReplicas opens the replicas this node holds at start: for a
// cluster being created, the initial placement's, bootstrapped; otherwise
// those it has state for, and those the catalogue gives it.
func (n *Node) openInitialReplicas(bootstrap bool) error {
	cat := n.Catalogue()
	self := n.cfg.Self.ID
	for shard := range n.cfg.Shards {
		var err error
		switch {
		case bootstrap:
			if replicas := cluster.Replicas(n.cfg.Members, shard); slices.ContainsFunc(replicas, func(m cluster.Member) bool { return m.ID == self }) {
				err = n.data.OpenReplica(shard, replicas, false)
			}
		default:
			placed := cat != nil && involves(cat.Placement[shard], self)
			voter := cat != nil && cat.Index > 0 && slices.Contains(cat.Placement[shard].Voters, self)
			if placed || n.cfg.Layout.HasShardDir(shard) {
				err = n.data.OpenReplica(shard, nil, voter)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
