package raftfix

import (
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// A voter refuses its vote, and its pre-vote, to a candidate that is not a
// voter in the latest configuration it holds (hashicorp/raft's
// requestVote, since its PR 526). So a replica that has not yet received
// the entry promoting X to voter will never elect X. After a promotion
// commits (three of four voters hold it), the next change can remove an
// old voter with a quorum that leaves out a replica Y still without the
// promotion: the group is then the leader, X and Y. When the leader is
// lost before Y catches up, X (the longest log) asks Y, which refuses it
// as a non-voter, and Y asks the leader and the removed replica, which do
// not answer or refuse its shorter log: the shard elects nobody, for as
// long as the leader is away. tests/membership_cutoff_test.go's rebalance
// met it in CI (the replica moving in and one staying both candidates for
// 20 s); acknowledged_test.go builds it with hashicorp/raft alone.
//
// So a leader changes a group's voters only once every voter that stays
// has acknowledged the configuration it changes (votersHold): then every
// voter knows every other as one, and whichever holds the longest log can
// be elected. acknowledged records what the leader's appends learned. (A
// voter whose node is down is not waited for: RaftShards.holdConfiguration.)
//
// Upstream: hashicorp/raft#526, "check if server is in configuration when
// receiving a voteRequest" (merged: requestVote refuses a candidate without
// a vote in the voter's latest configuration); no issue found for the
// election it strands (searched its issues for a promoted voter refused as
// a non-voter, and for no leader after a removal). Ongaro's dissertation
// (chapter 4, cluster membership changes, as quoted in RedisLabs/raft#50)
// has a server grant its vote to a candidate outside its latest
// configuration, since that vote may be needed to keep the cluster
// available, as it is here.
// Canary: TestCanaryRemovalStrandsAVoterWithoutThePromotion.

// acknowledged is what each server of a group has acknowledged holding,
// as this node's appends to it learned, in the latest term this node sent
// appends in: an entry a follower acknowledged to the leader of a term
// stays in its log while that leader leads.
type acknowledged struct {
	mu   sync.Mutex
	term uint64
	by   map[raft.ServerID]uint64 // server -> the last index it acknowledged
}

// sent records the outcome of an append to id: with no error and success,
// id's log matches this node's up to the request's last entry.
func (a *acknowledged) sent(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if args.Term > a.term || a.by == nil {
		a.term, a.by = args.Term, map[raft.ServerID]uint64{}
	}
	if err != nil || !resp.Success || args.Term < a.term {
		return
	}
	// A heartbeat names no entry (PrevLogEntry 0): it confirms nothing.
	a.by[id] = max(a.by[id], args.PrevLogEntry+uint64(len(args.Entries)))
}

// holds reports whether id has acknowledged the entry at index.
func (a *acknowledged) holds(id raft.ServerID, index uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.by[id] >= index
}

// votersHold reports whether every one of voters, other than self and
// except, has acknowledged the entry at index (the group's configuration).
// Without a record (a single node's group) it reports true: there is no
// other voter to wait for.
func (a *acknowledged) votersHold(voters []string, index uint64, self string, except ...string) bool {
	if a == nil {
		return true
	}
	for _, id := range voters {
		if id != self && !slices.Contains(except, id) && !a.holds(raft.ServerID(id), index) {
			return false
		}
	}
	return true
}
