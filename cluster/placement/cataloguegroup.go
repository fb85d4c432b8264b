package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/cluster/raftfix"
)

// Where the catalogue lives. The catalogue is replicated in a Raft group of
// its own, the catalogue group, on every node: up to three voters (as a
// shard has replicas, so it survives what the shards survive) and every
// other node a non-voter, which receives the log without voting, so that
// each node holds the whole catalogue and answers CLUSTER SLOTS from it.
// It is not replicated in the shards, as policies are: a shard lives on
// three nodes only, a node may hold no shard at all (one that has just
// joined), and a change of membership concerns every shard at once, which
// one group orders and the shards could not agree on.

// catalogueVoters is how many voters the catalogue group has, when there
// are that many nodes.
const catalogueVoters = cluster.MaxReplicas

// catalogueGroup is this node's replica of the catalogue group.
type catalogueGroup struct {
	raft *raftfix.Raft
	fsm  *catalogueFSM
	self string // this node's id
}

// openCatalogueGroup starts this node's replica of the catalogue group on
// its data plane; bootstrap, when not nil, is the configuration to
// bootstrap a new group with (a cluster created now, or a data directory
// upgraded from a release without the catalogue).
func (n *Node) openCatalogueGroup(bootstrap []cluster.Member) error {
	m := &catalogueGroup{fsm: newCatalogueFSM(n.data.Halt), self: n.cfg.Self.ID}
	r, existing, err := n.data.StartCatalogueGroup(m.fsm)
	if err != nil {
		return err
	}
	m.raft = r
	// Only the voters bootstrap (Raft refuses a non-voter's bootstrap); the
	// leader sends the others the configuration with the log.
	if conf := catalogueConfiguration(bootstrap); bootstrap != nil && !existing && hasVote(conf, n.cfg.Self.ID) {
		if err := m.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			m.close(n.cfg.Log)
			return fmt.Errorf("catalogue bootstrap: %w", err)
		}
	}
	n.meta.Store(m)
	return nil
}

// catalogueConfiguration is the catalogue group's first configuration: the
// first catalogueVoters members vote, the others do not. Every initial
// member bootstraps with the same one.
func catalogueConfiguration(members []cluster.Member) raft.Configuration {
	var c raft.Configuration
	for i, m := range members {
		suffrage := raft.Voter
		if i >= catalogueVoters {
			suffrage = raft.Nonvoter
		}
		c.Servers = append(c.Servers, raft.Server{Suffrage: suffrage, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Bus)})
	}
	return c
}

// hasVote reports whether id votes in c.
func hasVote(c raft.Configuration, id string) bool {
	for _, s := range c.Servers {
		if string(s.ID) == id && s.Suffrage == raft.Voter {
			return true
		}
	}
	return false
}

// close snapshots the catalogue group, which makes the next start fast, and
// shuts it down.
func (m *catalogueGroup) close(log *slog.Logger) {
	if err := m.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		log.Debug("catalogue snapshot at shutdown", "err", err)
	}
	if err := m.raft.Close("catalogue", log); err != nil {
		log.Warn("catalogue shutdown", "err", err)
	}
}

// leads reports whether this node leads the catalogue group.
func (m *catalogueGroup) leads() bool { return m != nil && m.raft.State() == raft.Leader }

// Catalogue returns the cluster's catalogue as this node holds it: the
// committed one, or until the catalogue group has committed one, the one
// this node started from (its initial members, or what the node it joined
// through sent).
func (n *Node) Catalogue() *cluster.Catalogue {
	if m := n.meta.Load(); m != nil {
		if c := m.fsm.cur.Load(); c != nil {
			return c
		}
	}
	return n.initial.Load()
}

// catalogueChanged returns a channel closed at the next change of the
// committed catalogue (never, without a catalogue group).
func (n *Node) catalogueChanged() <-chan struct{} {
	m := n.meta.Load()
	if m == nil {
		return nil
	}
	return m.fsm.changed()
}

// errCatalogueUnavailable answers a change when the catalogue group has
// no leader within the request timeout: nothing was changed.
type errCatalogueUnavailable struct{ why string }

func (e errCatalogueUnavailable) Error() string {
	return "the cluster's catalogue " + e.why + ": nothing was changed, retry"
}

// Unwrap returns ErrNotApplied: a retry is safe.
func (e errCatalogueUnavailable) Unwrap() error { return cluster.ErrNotApplied }

// propose commits op in the catalogue, through its leader wherever it is,
// and returns the catalogue after it once this node holds it too, or the
// error that refused op. It waits for a leader until ctx ends, or for the
// request timeout when ctx has no deadline.
func (n *Node) propose(ctx context.Context, op catalogueOp) (*cluster.Catalogue, error) {
	if !n.cfg.clustered() {
		return nil, refused(cluster.MemberConflict, "a single node has no cluster catalogue: start nodes with --cluster to form a cluster")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.cfg.RequestTimeout)
		defer cancel()
	}
	data := op.encode()
	for {
		cat, index, retry, err := n.proposeOnce(ctx, data)
		if !retry {
			if err != nil {
				return nil, err
			}
			if cat != nil {
				return cat, nil
			}
			return n.awaitCatalogue(ctx, index)
		}
		select {
		case <-ctx.Done():
			return nil, errCatalogueUnavailable{"has no leader within the request timeout"}
		case <-time.After(retryAfter):
		case <-n.stop:
			return nil, cluster.ErrShuttingDown
		}
	}
}

// proposeOnce sends data to the catalogue's leader once: it returns the
// catalogue after it (when applied here) or the index it was committed at
// (when applied elsewhere), or retry when no leader took it.
func (n *Node) proposeOnce(ctx context.Context, data []byte) (cat *cluster.Catalogue, index uint64, retry bool, err error) {
	meta := n.meta.Load()
	if meta == nil {
		return nil, 0, true, nil // the node is still starting
	}
	if meta.leads() {
		f := meta.raft.Apply(data, enqueueTimeout)
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrEnqueueTimeout) {
				return nil, 0, true, nil
			}
			return nil, 0, false, fmt.Errorf("the cluster's catalogue lost its leader while the change was being committed: "+
				"look at CLUSTER NODES before trying again: %w", cluster.ErrMayHaveBeenCounted)
		}
		res, _ := f.Response().(opResult)
		return res.cat, f.Index(), false, res.err
	}
	_, leader := meta.raft.LeaderWithID()
	m := n.member(string(leader))
	if m == nil {
		return nil, 0, true, nil
	}
	deadline, _ := ctx.Deadline()
	index, hint, err := n.data.SendCatalogueOp(m.Bus, data, deadline)
	switch {
	case err == nil:
		return nil, index, false, nil
	case hint != "" || errors.Is(err, cluster.ErrNotApplied):
		return nil, 0, true, nil
	}
	return nil, 0, false, err
}

// awaitCatalogue waits until this node's catalogue has applied index.
func (n *Node) awaitCatalogue(ctx context.Context, index uint64) (*cluster.Catalogue, error) {
	for {
		changed := n.catalogueChanged()
		if c := n.Catalogue(); c != nil && c.Index >= index {
			return c, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			// Committed: the change holds, this node is merely slow to
			// hear of it.
			return n.Catalogue(), nil
		case <-n.stop:
			return nil, cluster.ErrShuttingDown
		}
	}
}

// commitForwarded commits a catalogue change a peer forwarded, when this
// node leads the catalogue group: the index it was committed at, or the
// leader's id to ask instead.
func (n *Node) commitForwarded(data []byte) (index uint64, leader string, err error) {
	meta := n.meta.Load()
	if meta == nil {
		return 0, "", errCatalogueUnavailable{"is not open yet on this node"}
	}
	if !meta.leads() {
		_, id := meta.raft.LeaderWithID()
		if id == "" {
			return 0, "", errCatalogueUnavailable{"has no leader"}
		}
		return 0, string(id), nil
	}
	if _, err := decodeCatalogueOp(data); err != nil {
		return 0, "", err
	}
	f := meta.raft.Apply(data, enqueueTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrEnqueueTimeout) {
			return 0, "", errCatalogueUnavailable{"is changing leader"}
		}
		return 0, "", fmt.Errorf("the cluster's catalogue lost its leader while the change was being committed: %w", cluster.ErrMayHaveBeenCounted)
	}
	res, _ := f.Response().(opResult)
	return f.Index(), "", res.err
}

// committedCatalogue is the catalogue the catalogue group has committed,
// nil before it has (or for a single node).
func (n *Node) committedCatalogue() *cluster.Catalogue {
	m := n.meta.Load()
	if m == nil {
		return nil
	}
	return m.fsm.cur.Load()
}

// member returns the member with id, or nil.
func (n *Node) member(id string) *cluster.Member {
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

// VotersHold reports whether every one of voters, other than this node and
// except, has acknowledged the catalogue group's configuration at index
// (cluster/raftfix/acknowledged.go).
func (m *catalogueGroup) VotersHold(voters []string, index uint64, except ...string) bool {
	return m.raft.VotersHold(voters, index, m.self, except...)
}
