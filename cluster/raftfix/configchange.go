package raftfix

import (
	"time"

	"github.com/hashicorp/raft"
)

// A promotion can stall in hashicorp/raft (v1.7.3) until the group appends
// another entry. appendConfigurationEntry hands the new configuration's
// entry to replication (dispatchLogs) before the leader counts by the new
// configuration (commitment.setConfiguration), and that starts the promoted
// server at index 0: an acknowledgement it sent in between, as a
// non-voter, is lost. When the old configuration's voters have not
// committed the entry by then either (one is slow, another down), the
// entry needs an acknowledgement the promoted server will not send again,
// heartbeats not being counted, until there is a new entry to send it: in
// an idle group, such as the catalogue's, for as long as nothing else is
// appended. CI met it once: TestRemovalWaitsForThePromotionToReachEveryVoter
// waited ten minutes for a promotion, with one voter cut off, under the
// race detector; TestPromotionCommitsWhenAcknowledgedBeforeItCounts makes
// the order.
//
// Upstream: no hashicorp/raft issue found (searched its issues for a
// promotion or AddVoter that commits only once another entry is appended,
// and for the order of appendConfigurationEntry). The code path is raft.go,
// appendConfigurationEntry (dispatchLogs before commitment.setConfiguration),
// commitment.go, setConfiguration (a new voter starts at 0), and
// replication.go, updateLastAppended (only an append that carries entries
// counts); unchanged in v1.8.0. The Raft paper commits an entry once a
// majority of the configuration stores it (figure 2, Rules for Servers,
// Leaders: a majority of matchIndex[i] >= N), which the promoted server's
// acknowledgement makes.
// Canary: TestCanaryPromotionAcknowledgedBeforeItCountsStalls.
//
// configNudge is how long a change may wait for its commit before the
// leader appends a barrier, an entry every replica acknowledges, and with
// it the promoted server's acknowledgement counts. Far above a commit on a
// busy machine (milliseconds), so that the barrier is the exception.
const configNudge = time.Second

// awaitConfigChange waits for f, a configuration change of r, to commit or
// fail, appending a barrier to r every configNudge meanwhile (see above).
// A barrier changes no state: no state machine applies it.
func awaitConfigChange(r *raft.Raft, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	nudge := time.NewTicker(configNudge)
	defer nudge.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-nudge.C:
			// Not waited for: f's own outcome is what is awaited, and a
			// barrier a former leader could not append fails by itself.
			r.Barrier(configNudge)
		}
	}
}

// AwaitConfigChange waits for f, a change of the group's configuration
// (AddVoter, AddNonvoter, RemoveServer, DemoteVoter), to commit or fail,
// nudging a stalled promotion along (see above).
func (r *Raft) AwaitConfigChange(f raft.Future) error { return awaitConfigChange(r.Raft, f) }
