package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"
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
//
// The group's id on the bus is catalogueGroup, beyond the shard numbers.

const catalogueGroup = 0xFFFF

// catalogueVoters is how many voters the catalogue group has, when there
// are that many nodes.
const catalogueVoters = maxReplicas

// metaGroup is this node's replica of the catalogue group.
type metaGroup struct {
	raft *raftfix.Raft
	fsm  *catalogueFSM
}

// openMeta opens the catalogue group's stores and starts its Raft
// instance; bootstrap, when not nil, is the configuration to bootstrap a
// new group with (a cluster created now, or a data directory upgraded from
// a release without the catalogue).
func openMeta(cfg *RaftConfig, stream raft.StreamLayer, halt chan<- error, bootstrap []Member) (m *metaGroup, err error) {
	started := false
	defer func() {
		if err != nil && !started && stream != nil {
			stream.Close()
		}
	}()
	dir, err := cfg.Layout.CatalogueDir()
	if err != nil {
		return nil, err
	}
	m = &metaGroup{fsm: newCatalogueFSM(halt)}
	st, err := openStores(dir, cfg.LogStore, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	started = true
	if m.raft, err = startGroup(cfg, "raft.catalogue", m.fsm, st, stream); err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	// Only the voters bootstrap (Raft refuses a non-voter's bootstrap); the
	// leader sends the others the configuration with the log.
	if conf := catalogueConfiguration(bootstrap); bootstrap != nil && !st.existing && hasVote(conf, cfg.Self.ID) {
		if err := m.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			m.close(cfg.Log)
			return nil, fmt.Errorf("catalogue bootstrap: %w", err)
		}
	}
	return m, nil
}

// catalogueConfiguration is the catalogue group's first configuration: the
// first catalogueVoters members vote, the others do not. Every initial
// member bootstraps with the same one.
func catalogueConfiguration(members []Member) raft.Configuration {
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

// close shuts the catalogue group down.
func (m *metaGroup) close(log *slog.Logger) {
	if err := m.raft.Close("catalogue", log); err != nil {
		log.Warn("catalogue shutdown", "err", err)
	}
}

// configuration reads the catalogue group's latest configuration and the
// index it was committed at; ok is false while it is not known to be
// committed (committedconfig.go).
func (m *metaGroup) configuration() (servers []raft.Server, index uint64, ok bool) {
	return m.raft.Configuration()
}

// leads reports whether this node leads the catalogue group.
func (m *metaGroup) leads() bool { return m != nil && m.raft.State() == raft.Leader }

// Catalogue returns the cluster's catalogue as this node holds it: the
// committed one, or until the catalogue group has committed one, the one
// this node started from (its initial members, or what the node it joined
// through sent).
func (n *RaftShards) Catalogue() *Catalogue {
	if m := n.meta.Load(); m != nil {
		if c := m.fsm.cur.Load(); c != nil {
			return c
		}
	}
	return n.initial.Load()
}

// catalogueChanged returns a channel closed at the next change of the
// committed catalogue (never, without a catalogue group).
func (n *RaftShards) catalogueChanged() <-chan struct{} {
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
func (e errCatalogueUnavailable) Unwrap() error { return ErrNotApplied }

// propose commits op in the catalogue, through its leader wherever it is,
// and returns the catalogue after it once this node holds it too, or the
// error that refused op. It waits for a leader until ctx ends, or for the
// request timeout when ctx has no deadline.
func (n *RaftShards) propose(ctx context.Context, op catalogueOp) (*Catalogue, error) {
	if !n.cfg.clustered() {
		return nil, refused(MemberConflict, "a single node has no cluster catalogue: start nodes with --cluster to form a cluster")
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
		case <-time.After(rerouteRetry):
		case <-n.stop:
			return nil, ErrShuttingDown
		}
	}
}

// proposeOnce sends data to the catalogue's leader once: it returns the
// catalogue after it (when applied here) or the index it was committed at
// (when applied elsewhere), or retry when no leader took it.
func (n *RaftShards) proposeOnce(ctx context.Context, data []byte) (cat *Catalogue, index uint64, retry bool, err error) {
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
				"look at CLUSTER NODES before trying again: %w", ErrMayHaveBeenCounted)
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
	index, hint, err := n.fwd.catalogueOp(m.Bus, data, deadline)
	switch {
	case err == nil:
		return nil, index, false, nil
	case hint != "" || errors.Is(err, ErrNotApplied):
		return nil, 0, true, nil
	}
	return nil, 0, false, err
}

// awaitCatalogue waits until this node's catalogue has applied index.
func (n *RaftShards) awaitCatalogue(ctx context.Context, index uint64) (*Catalogue, error) {
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
			return nil, ErrShuttingDown
		}
	}
}

// applyCatalogueOp applies a catalogue change a peer forwarded, when this
// node leads the catalogue group: the index it was committed at, or the
// leader's id to ask instead.
func (n *RaftShards) applyCatalogueOp(data []byte) (index uint64, leader string, err error) {
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
		return 0, "", fmt.Errorf("the cluster's catalogue lost its leader while the change was being committed: %w", ErrMayHaveBeenCounted)
	}
	res, _ := f.Response().(opResult)
	return f.Index(), "", res.err
}
