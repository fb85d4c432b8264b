package raftfix

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// hashicorp/raft v1.7.3's GetConfiguration reports a group's latest
// configuration, committed or not, with index 0 (its future's index is
// never set; Stats reads the same future), and nothing else it exports says
// whether that configuration is committed. Yet a leader must not change a
// group's members while a change is being committed, nor report to the
// catalogue a configuration the group may still lose: the catalogue would
// have a removed replica's node drop it while the group may still need its
// vote. Nor can the catalogue tell an older report from a newer one without
// the index.
//
// So New wraps each group's state machine to record the configurations it
// applies, which are committed (committedConfiguration,
// recordConfigurations), and the snapshot store gives the one inside the
// latest snapshot, which a replica holds without applying it (restored at
// start, or sent by the leader).
//
// Upstream: hashicorp/raft#379, "Read latest configuration independently
// from main loop" (merged): GetConfiguration's future is built from the
// latest configuration alone, without its index, although
// ConfigurationFuture's Index says it is the latest configuration's; no
// issue found reporting it (searched its issues for GetConfiguration's
// index and latest_configuration_index 0). Had hashicorp/raft the index,
// its CommitIndex would say whether the configuration is committed.
// Canary: TestCanaryGetConfigurationSaysNoIndex.

// committedConfiguration is the latest configuration a group's state
// machine has applied, and its index.
type committedConfiguration struct {
	p atomic.Pointer[indexedConfiguration]
}

// indexedConfiguration is a configuration and the index of its entry.
type indexedConfiguration struct {
	index   uint64
	servers []raft.Server
}

// store records c, committed at index, unless a later one is recorded.
func (cc *committedConfiguration) store(index uint64, c raft.Configuration) {
	next := &indexedConfiguration{index: index, servers: c.Servers}
	for {
		cur := cc.p.Load()
		if cur != nil && cur.index >= index {
			return
		}
		if cc.p.CompareAndSwap(cur, next) {
			return
		}
	}
}

// latestConfiguration reads r's latest configuration, and the index it was
// committed at; ok is false while it is not known to be committed (a
// change being committed, or its commit not applied here yet).
func latestConfiguration(r *raft.Raft, committed *committedConfiguration, snaps raft.SnapshotStore) (servers []raft.Server, index uint64, ok bool) {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return nil, 0, false
	}
	servers = f.Configuration().Servers
	c := committed.p.Load()
	if c == nil || !sameServers(c.servers, servers) {
		// Perhaps the committed one is in a snapshot this replica restored
		// or was sent, and the log holds no configuration after it.
		if metas, err := snaps.List(); err == nil && len(metas) > 0 {
			committed.store(metas[0].ConfigurationIndex, metas[0].Configuration)
			c = committed.p.Load()
		}
	}
	if c == nil || !sameServers(c.servers, servers) {
		return servers, 0, false
	}
	return servers, c.index, true
}

// sameServers reports whether a and b have the same servers, each with the
// same vote, in any order.
func sameServers(a, b []raft.Server) bool {
	byID := func(x, y raft.Server) int { return cmp.Compare(x.ID, y.ID) }
	a, b = slices.SortedFunc(slices.Values(a), byID), slices.SortedFunc(slices.Values(b), byID)
	return slices.EqualFunc(a, b, func(x, y raft.Server) bool { return x.ID == y.ID && x.Suffrage == y.Suffrage })
}

// configurationRecorder is a group's state machine, given its entries in
// batches, which records the configurations among them before it hands
// the batch on.
type configurationRecorder struct {
	raft.FSM
	batching  raft.BatchingFSM // FSM, when it takes batches itself
	committed *committedConfiguration
}

// recordConfigurations wraps fsm so that the configurations it is given
// are recorded in committed.
func recordConfigurations(fsm raft.FSM, committed *committedConfiguration) raft.BatchingFSM {
	batching, _ := fsm.(raft.BatchingFSM)
	return &configurationRecorder{FSM: fsm, batching: batching, committed: committed}
}

// ApplyBatch records the configurations among logs, then applies them: in
// one call when the state machine batches, else its commands one by one.
func (c *configurationRecorder) ApplyBatch(logs []*raft.Log) []any {
	for _, l := range logs {
		if l.Type == raft.LogConfiguration {
			c.committed.store(l.Index, raft.DecodeConfiguration(l.Data))
		}
	}
	if c.batching != nil {
		return c.batching.ApplyBatch(logs)
	}
	out := make([]any, len(logs))
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = c.FSM.Apply(l)
		}
	}
	return out
}

// Apply applies one entry; hashicorp/raft calls ApplyBatch instead.
func (c *configurationRecorder) Apply(l *raft.Log) any { return c.ApplyBatch([]*raft.Log{l})[0] }
