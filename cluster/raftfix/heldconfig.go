package raftfix

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// A configuration entry that takes a server's vote (removes it from the
// group, or leaves it a non-voter) must not reach that server first.
// hashicorp/raft applies a configuration as soon as it is in a replica's
// log, and a replica whose latest configuration gives it no vote never
// starts an election (runFollower), while it still refuses its vote to any
// candidate whose log is shorter than its own. When the leader appends the
// entry that removes X, its replication sends that entry to X (the push
// that tells X it was removed). If X is then the only replica besides the
// leader to hold it, and the leader dies or is cut off before the others
// have it, no replica can be elected: X does not stand, and refuses every
// other candidate, whose logs are shorter. The group stays without a leader
// until the old leader comes back, and forever if it does not.
// tests/membership_cutoff_test.go's rebalance through a cut-off leader met
// it now and then (one replica a candidate in the same term for 20 s, the
// others followers); heldconfig_test.go builds it with hashicorp/raft alone.
//
// heldConfigurations wraps a group's transport so that the leader sends a
// server such an entry (and what follows it) only once the entry is
// committed. Until then the server's appends stop just before it, so X
// holds nothing the others do not need for an election: it stands and votes
// under the configuration it had, in which it still votes. Holding the
// entry back never delays its commit, which counts only the voters of the
// new configuration, X not among them. Once it is committed X may have it:
// the leader's replication to a server it removed ends with one last push,
// which waits here a moment for the commit; when the commit comes later than
// that, X never learns from Raft that it was removed, and the catalogue,
// which places the replicas, has its node drop the replica
// (RaftShards.followPlacement).
//
// Seeing every append, it also records what each server acknowledged
// (acknowledged.go), for the changes that wait for it.
//
// Upstream: no hashicorp/raft issue found (searched its issues for a
// removed server that holds its removal, refuses votes and leaves the group
// without a leader). It follows from hashicorp/raft#476, "Forbid removed
// node from being a Candidate", and #483, "a NonVoter node should never be
// able to transition to a Candidate state" (runFollower stands only with a
// vote in the latest configuration, committed or not), with the Raft paper's
// election restriction (section 5.4.1: a voter refuses a candidate whose log
// is less up to date than its own).
// Canary: TestCanaryRemovedReplicaHoldsItsRemovalAlone.
type heldConfigurations struct {
	netTransport
	raft atomic.Pointer[raft.Raft] // the group's Raft, once it runs
	acks acknowledged
}

// heldWait bounds how long an append that would carry a held entry waits
// for its commit before it is sent without it: long enough for a commit on
// a busy machine, so that the last push to a removed server usually carries
// its removal, short enough not to hold a replication goroutine for long.
const heldWait = 50 * time.Millisecond

// withHeldConfigurations wraps t (see heldConfigurations).
func withHeldConfigurations(t netTransport) *heldConfigurations {
	return &heldConfigurations{netTransport: t}
}

// serve gives the wrapper the Raft it serves (New calls it): until then
// it holds nothing back, as nothing is replicated before the group has a
// Raft.
func (h *heldConfigurations) serve(r *raft.Raft) { h.raft.Store(r) }

// errHeldByFormerLeader ends the replication of a leader that stepped down
// while it held a configuration entry back: that entry may never commit.
var errHeldByFormerLeader = errors.New("a configuration entry held back until it commits, and this replica no longer leads")

// AppendEntries sends args to the server id, without the entries it must
// not have yet (see heldConfigurations), after waiting up to heldWait for
// them to commit.
func (h *heldConfigurations) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	r := h.raft.Load()
	if r == nil {
		return h.netTransport.AppendEntries(id, target, args, resp)
	}
	if n := sendable(id, args.Entries, r.CommitIndex()); n < len(args.Entries) {
		for deadline := time.Now().Add(heldWait); n < len(args.Entries) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			n = sendable(id, args.Entries, r.CommitIndex())
		}
		if n == 0 && r.State() != raft.Leader {
			// Raft's replication would send the rest again and again.
			return errHeldByFormerLeader
		}
		// Raft's replication learns from the request which entries the
		// server holds now, and sends the rest next.
		args.Entries = args.Entries[:n]
	}
	err := h.netTransport.AppendEntries(id, target, args, resp)
	h.acks.sent(id, args, resp, err)
	return err
}

// AppendEntriesPipeline refuses: the appends of a pipeline would bypass
// AppendEntries. rlserver turns pipelining off anyway (transportConfig).
func (h *heldConfigurations) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// sendable is how many of entries, from the first, may go to the server id
// while the group has committed up to committed: all, or those before the
// first configuration entry not yet committed in which id has no vote.
func sendable(id raft.ServerID, entries []*raft.Log, committed uint64) int {
	for i, e := range entries {
		if e.Type == raft.LogConfiguration && e.Index > committed && !hasVote(raft.DecodeConfiguration(e.Data), string(id)) {
			return i
		}
	}
	return len(entries)
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
