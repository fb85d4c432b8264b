package placement

import (
	"fmt"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// Config configures a durable node: its data plane (the embedded
// cluster.RaftConfig, whose Cluster and Control Start sets) and its place
// in a cluster. Start from DefaultConfig, set what differs; Start checks it
// with Validate before anything starts.
type Config struct {
	cluster.RaftConfig
	// Members are the cluster's initial members, Self included (the
	// --cluster list it was created with); just Self for a single node;
	// none for a node that joins an existing cluster (Join).
	Members []cluster.Member
	// Join is the bus address of a member to join the cluster through
	// ("host:port"), for a node started with --join. Shards may then be 0:
	// the cluster says. With Members too, the node is one of the cluster's
	// initial members unless, its data directory being new, the cluster
	// already exists without it: it then joins through Join (a StatefulSet
	// scaled up gives every pod the same flags).
	Join string
	// Incarnation is the random id of the data directory
	// (persistence.Identity): the cluster remembers each node's, and
	// refuses a node that comes back under its id with another one.
	Incarnation string
	// Upgraded says the data directory was made by a release before the
	// catalogue: its catalogue group is bootstrapped from Members.
	Upgraded bool
	// ReplaceDeadAfter, when not 0, is how long a node of a cluster of more
	// than three nodes may be down before its replicas are re-created on
	// the others.
	ReplaceDeadAfter time.Duration
	// AutoRebalance has the placement driver, while this node leads the
	// catalogue, rebalance by itself whenever every node answers, nothing
	// moves and CLUSTER REBALANCE DRYRUN would plan a step: a node that
	// joins is given replicas, and leaderships spread, without an operator.
	AutoRebalance bool
}

// DefaultConfig returns the defaults for the node self among members (self
// included): cluster.DefaultRaftConfig's for as many nodes.
func DefaultConfig(self cluster.Member, members []cluster.Member) Config {
	return Config{RaftConfig: cluster.DefaultRaftConfig(self, len(members)), Members: members}
}

// clustered reports whether the node is a cluster's (with a bus and a
// catalogue) rather than a single node.
func (c Config) clustered() bool { return c.Join != "" || len(c.Members) > 1 }

// Validate returns an error naming the first setting that cannot work.
func (c Config) Validate() error {
	if err := c.validateMembers(); err != nil {
		return err
	}
	switch {
	case c.clustered() && c.Bus == nil:
		return invalidSetting("Config.Bus", "a cluster node needs a bus listener")
	case c.clustered() && c.Incarnation == "":
		return invalidSetting("Config.Incarnation", "a cluster node needs its data directory's incarnation")
	case c.ReplaceDeadAfter < 0:
		return invalidSetting("Config.ReplaceDeadAfter", "%v: must not be negative", c.ReplaceDeadAfter)
	}
	data := c.RaftConfig
	if c.Join != "" && data.Shards == 0 {
		data.Shards = 1 // the cluster it joins says how many
	}
	return data.Validate()
}

// validateMembers checks Self, Members and Join.
func (c Config) validateMembers() error {
	if c.Self.ID == "" {
		return invalidSetting("Config.Self.ID", "must not be empty")
	}
	if c.Join != "" && len(c.Members) == 0 {
		return nil
	}
	found := false
	for i, m := range c.Members {
		if m.ID == "" {
			return invalidSetting("Config.Members", "member %d has no id", i)
		}
		for _, other := range c.Members[:i] {
			switch {
			case other.ID == m.ID:
				return invalidSetting("Config.Members", "%q is listed twice", m.ID)
			case other.Bus == m.Bus || other.Client == m.Client:
				// Raft would take the two for one node, and a voter would
				// vote for both in one term.
				return invalidSetting("Config.Members", "%q and %q share an address (%s@%s, %s@%s)", other.ID, m.ID, other.Client, other.Bus, m.Client, m.Bus)
			}
		}
		if m.ID == c.Self.ID {
			if m != c.Self {
				return invalidSetting("Config.Self", "%+v differs from its entry in Members, %+v", c.Self, m)
			}
			found = true
		}
	}
	if !found {
		return invalidSetting("Config.Self", "%q is not among Members", c.Self.ID)
	}
	return nil
}

// invalidSetting is the error Validate returns about setting, the field's
// name.
func invalidSetting(setting, format string, args ...any) error {
	return fmt.Errorf("%s: %s", setting, fmt.Sprintf(format, args...))
}
