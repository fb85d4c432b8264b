package raftfix

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// A voter that must not lead (its clock is off from the others', its log
// cannot be written) must stay out of elections while it must not, and
// hashicorp/raft has no way to say so: every voter stands once it stops
// hearing from a leader. A leader whose log store fails steps down
// (raft.go, dispatchLogs), and then stands again at once: its log is as
// long as the others' (the entry it could not write was never sent), its
// followers still name it as their leader and so grant it their votes,
// and its small writes (the term, its own vote) still fit on a full disk.
// It wins again as often as not, fails again, and the shard churns until
// another node happens to time out first.
//
// abstention wraps a group's transport so that, while mayLead says why the
// node must not lead, the requests for votes it sends (pre-votes and
// votes) fail before they leave: it can win no election, and since it asks
// for pre-votes first its term does not grow, so it disturbs no leader. A
// leader's request that it take the leadership over at once (TimeoutNow,
// a leadership transfer) is refused too (screen), so that the leader tries
// another voter. It votes for the others as before, and follows the
// leader they elect. A group of one voter elects itself without asking
// anybody: there is nobody else to lead it. Stepping down, when it leads,
// is the caller's (cluster/placement hands the leadership over).
//
// Upstream: hashicorp/raft#614, "Node unable to persist log, but keeps
// being elected" (open: the churn above, met in production for ten
// minutes). hashicorp/raft#218, "Suggestion: control over leader identity",
// and its PR #220, a NeverLeader setting, were closed in favour of
// non-voters; demoting a voter is a configuration change, which needs the
// leader the node may be, and a majority the shard may lack. The code
// paths are raft.go, runFollower (every voter stands) and dispatchLogs
// (the step-down), unchanged in v1.8.0.
// Canary: TestCanaryAVoterWhoseLogFailsIsElectedAgain.
type abstention struct {
	netTransport
	mayLead func() error // nil when the node may lead; else why not
}

// ErrAbstains is what a request for votes fails with while the node must
// not lead (see abstention), and what a TimeoutNow is answered with.
var ErrAbstains = errors.New("this node stays out of elections")

// abstains returns the error a request for votes fails with, nil when the
// node may lead.
func (a *abstention) abstains() error {
	if why := a.mayLead(); why != nil {
		return fmt.Errorf("%w: %w", ErrAbstains, why)
	}
	return nil
}

// RequestVote asks id for its vote, unless the node must not lead.
func (a *abstention) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if err := a.abstains(); err != nil {
		return err
	}
	return a.netTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote asks id for its pre-vote, unless the node must not lead.
func (a *abstention) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if err := a.abstains(); err != nil {
		return err
	}
	return a.netTransport.RequestPreVote(id, target, args, resp)
}

// screen answers a request Raft must not get, and reports whether it did:
// a TimeoutNow while the node must not lead.
func (a *abstention) screen(rpc raft.RPC) bool {
	if _, ok := rpc.Command.(*raft.TimeoutNowRequest); !ok {
		return false
	}
	err := a.abstains()
	if err != nil {
		rpc.Respond(nil, err)
	}
	return err != nil
}
