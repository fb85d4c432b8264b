package cluster

import (
	"fmt"
	"time"

	"github.com/rlserver/rlserver/persistence"
)

// Whether this node should lead a group. A node whose clock is not trusted
// (clockcheck.go), or one of whose logs cannot be written, must not lead
// any (the logs share the data directory's disk: a full disk fails them
// all, each at its next append, and a group whose log has not been written
// since is no safer to lead): it stays out of the elections (raftfix's
// abstention), its proposers stamp nothing (the clock), and the control
// plane hands its leaderships over. A node whose log for a group is slow
// to write should not lead that group when another voter can: the control
// plane hands it to a voter that is fit, and the node still stands in
// elections, so that a shard whose every replica is slow still has a
// leader.

// DefaultSlowLogWrite is how long an append to a log, fsync included, may
// take before it counts as slow (RaftConfig.SlowLogWrite): a disk in good
// health appends in a few milliseconds (tens on a busy network disk), and
// a leader whose appends take longer than half the default request timeout
// answers few requests within it, each waiting for the entry before its
// own. etcd warns of an fsync slower than a second.
const DefaultSlowLogWrite = 500 * time.Millisecond

// mustNotLead is why this node must not lead g now; nil when it may.
func (g *Group) mustNotLead() error {
	if g.node.mustNotLead != nil {
		return g.node.mustNotLead()
	}
	if err := g.node.clock.untrusted(); err != nil || g.disk == nil {
		return err
	}
	return g.disk.Failing()
}

// mustNotLead is why this node must not lead any group now: its clock is
// not trusted, or one of its logs cannot be written. Nil when it may.
func (n *RaftShards) mustNotLead() error {
	if err := n.clock.untrusted(); err != nil {
		return err
	}
	return n.logFailing()
}

// logFailing is why one of this node's logs cannot be written, nil when
// every one can.
func (n *RaftShards) logFailing() error {
	if d := n.catalogueDisk.Load(); d != nil {
		if err := d.Failing(); err != nil {
			return fmt.Errorf("the catalogue: %w", err)
		}
	}
	for shard := range n.groups {
		if g := n.groups[shard].Load(); g != nil && g.disk != nil {
			if err := g.disk.Failing(); err != nil {
				return fmt.Errorf("shard %d: %w", shard, err)
			}
		}
	}
	return nil
}

// Unfit says why this node should not lead the group now, nil when it may:
// must when it must not (its clock is not trusted, the group's log cannot
// be written), else when it should hand the leadership to a voter that is
// fit (the log is slow to write).
func (g *Group) Unfit() (must bool, why error) {
	if why = g.mustNotLead(); why != nil {
		return true, why
	}
	if g.disk != nil {
		why = g.disk.Slow()
	}
	return false, why
}

// CheckClock takes the offsets of the other nodes' clocks that the latest
// health polls measured (those that answered lately, of others other
// nodes in the cluster), and decides whether this node's clock is trusted
// (clockcheck.go).
func (n *RaftShards) CheckClock(offsets []ClockOffset, others int) { n.clock.check(offsets, others) }

// CatalogueMustNotLead is why this node must not lead the catalogue's
// group: its clock is not trusted, or one of its logs cannot be written.
// Nil when it may.
func (n *RaftShards) CatalogueMustNotLead() error { return n.mustNotLead() }

// Fitness is what this node's checks found: its clock against the others',
// and its logs' disk (INFO).
type Fitness struct {
	Clock ClockState
	// SlowLogWrite is the threshold of a slow append; LastLogWrite the
	// slowest latest append among the groups' logs.
	SlowLogWrite, LastLogWrite time.Duration
	// LogFailing names the groups whose log cannot be written, with why;
	// LogSlow those whose log is slow.
	LogFailing, LogSlow []error
	// MustNotLead is why this node leads no group now (its clock, a log
	// that cannot be written); nil when it may lead.
	MustNotLead error
}

// Fitness returns what this node's checks found.
func (n *RaftShards) Fitness() Fitness {
	f := Fitness{Clock: n.clock.state(), SlowLogWrite: n.cfg.SlowLogWrite, MustNotLead: n.mustNotLead()}
	add := func(what string, disk *persistence.DiskHealth) {
		if disk == nil {
			return
		}
		st := disk.State()
		f.LastLogWrite = max(f.LastLogWrite, st.Last)
		if st.Failing != nil {
			f.LogFailing = append(f.LogFailing, fmt.Errorf("%s: %w", what, st.Failing))
		}
		if st.Slow != nil {
			f.LogSlow = append(f.LogSlow, fmt.Errorf("%s: %w", what, st.Slow))
		}
	}
	add("the catalogue", n.catalogueDisk.Load())
	for shard := range n.groups {
		if g := n.groups[shard].Load(); g != nil {
			add(fmt.Sprintf("shard %d", shard), g.disk)
		}
	}
	return f
}

// unfitError is why /readyz says this node is not ready although it
// serves: its clock is not trusted, or a log it holds cannot be written.
// Nil when neither.
func (n *RaftShards) unfitError() error {
	if err := n.mustNotLead(); err != nil {
		return fmt.Errorf("%w: %w", errNotReady, err)
	}
	return nil
}
