package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// Both runners take a configuration: start from DefaultMemoryConfig or
// DefaultRaftConfig, set what differs, and NewMemoryShards or StartRaft
// checks it with Validate before anything starts. No setting means something
// else when left at its zero value: a zero setting is refused when it cannot
// work.

// MemoryConfig configures the memory-only shards.
type MemoryConfig struct {
	// Shards is the number of shards, from 1 to MaxShards.
	Shards int
	// Clock is the time each batch is stamped with.
	Clock Clock
	// Scripts runs the shards' Lua scripts (EVAL); nil refuses them.
	Scripts engine.ScriptRunner
	// SnapshotNice is the scheduling priority (nice, 1 to 19) of the thread
	// that encodes a backup of a shard, which has a processor of its own
	// meanwhile (encoder.go); 0 encodes it as any other goroutine.
	SnapshotNice int
}

// DefaultMemoryConfig returns the defaults: one shard, on the system clock.
func DefaultMemoryConfig() MemoryConfig {
	return MemoryConfig{Shards: 1, Clock: SystemClock{}, SnapshotNice: DefaultSnapshotNice}
}

// Validate returns an error naming the first setting that cannot work.
func (c MemoryConfig) Validate() error {
	if err := validShards("MemoryConfig", c.Shards); err != nil {
		return err
	}
	if c.Clock == nil {
		return invalidSetting("MemoryConfig.Clock", "must be set")
	}
	return validSnapshotNice("MemoryConfig", c.SnapshotNice)
}

// validSnapshotNice checks a SnapshotNice setting.
func validSnapshotNice(config string, nice int) error {
	if nice < 0 || nice > MaxSnapshotNice {
		return invalidSetting(config+".SnapshotNice", "%d: must be from 0 to %d", nice, MaxSnapshotNice)
	}
	return nil
}

// RaftConfig configures a node's data plane in Raft mode.
type RaftConfig struct {
	Self Member // this node
	// Shards is the number of shards, from 1 to MaxShards.
	Shards int
	// Layout is the data directory that holds every shard's log and
	// snapshots, and the catalogue's.
	Layout persistence.Layout
	// LogStore is the format of the Raft log stores this node creates (a
	// group's existing store keeps its own).
	LogStore persistence.LogFormat
	// LogJournal syncs the appends of the shards' WAL logs through one
	// journal for the node (persistence.Journal): appends that coincide,
	// whichever shards they are for, share one fsync. Without it each
	// append is synced on its own. Either way a journal a node left
	// behind is replayed before any log opens.
	LogJournal bool
	// journal is the node's journal while LogJournal runs (StartRaft).
	journal *persistence.Journal
	// Clock is the time the leader stamps on each batch.
	Clock Clock
	// Log takes the node's records, hashicorp/raft's among them (see
	// raftlog.go).
	Log *slog.Logger
	// Bus is the listener for Raft, forwarding and the control plane's
	// calls; a node of a cluster needs it, a single node's groups need no
	// network.
	Bus net.Listener
	// Cluster is the cluster's id, which every bus connection carries.
	Cluster ClusterID
	// Dial opens connections to other nodes' buses.
	Dial Dialer
	// BusTLS, when set, makes the bus mutual TLS: nodes without a
	// certificate signed by its CAs cannot connect (see bustls.go).
	BusTLS *BusTLS
	// Control is the node's control plane, which says which replicas it
	// holds (cluster/placement).
	Control ControlPlane
	// Scripts runs the shards' Lua scripts (EVAL); nil refuses them.
	Scripts engine.ScriptRunner

	// HeartbeatTimeout is how long a follower waits to hear from its leader
	// before it starts an election, and how long a leader that cannot reach
	// a majority keeps leading; from 10 ms to 1 minute.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits for votes; from
	// HeartbeatTimeout to 1 minute.
	ElectionTimeout time.Duration
	// SnapshotThreshold is how many entries are written between snapshots
	// (at least 1), SnapshotInterval how often that is checked (at least
	// 5 ms), TrailingLogs how many entries a snapshot leaves in the log.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// SnapshotLogPercent, when not 0, holds a shard's next snapshot until
	// its log has also grown by that percentage of the last snapshot's size
	// (up to 10,000), so that a large shard does not write its whole state
	// every SnapshotThreshold entries (snapshotpace.go); 0 snapshots every
	// SnapshotThreshold entries whatever the state's size.
	SnapshotLogPercent uint64
	// SnapshotNice is the scheduling priority (nice, 1 to 19) of the thread
	// that encodes a shard's snapshot (Raft's, a backup's, a new
	// replica's), which has a processor of its own meanwhile (encoder.go);
	// 0 encodes it as any other goroutine.
	SnapshotNice int
	// RequestTimeout bounds how long a request waits for its answer when
	// its waiter sets no Deadline (Request.Deadline): for an election to
	// end, then for its leader. The server sets every request's deadline
	// from its own request timeout, normally this one.
	RequestTimeout time.Duration

	// MaxClockOffset is how far this node's clock may be from the clocks
	// of a majority of the other nodes for it to lead (clockcheck.go);
	// from 1 ms to 1 hour.
	MaxClockOffset time.Duration
	// SlowLogWrite is how long an append to a group's log, fsync
	// included, may take before it counts as slow: a node whose appends to
	// a group's log are slow, several in a row, hands the group's
	// leadership to a voter whose are not (fitness.go); from 1 ms to 1
	// minute.
	SlowLogWrite time.Duration
	// DiskFaults, when set, are injected into the appends to every log of
	// this node (DEBUG DISK, tests only).
	DiskFaults *persistence.DiskFaults
}

// The bounds of the Raft timeouts: below the minimum a busy machine's pauses
// would start elections, above the maximum a failover takes longer than any
// client waits.
const (
	minHeartbeat = 10 * time.Millisecond
	maxTimeout   = time.Minute
)

// DefaultClusterHeartbeat is a cluster's Raft heartbeat and election
// timeout. A follower starts an election between one and two of them after
// it last heard from its leader, and both followers of a shard must have
// (a follower that still hears its leader refuses to vote: hashicorp/raft's
// pre-vote and leader stickiness), so a leader that dies or freezes is
// replaced within about two. 500 ms makes that about a second, and is long
// enough that a saturated machine's pauses start no election (bench/elections;
// docs/cluster.md has the measurements and the failover timeline).
const DefaultClusterHeartbeat = 500 * time.Millisecond

// DefaultRequestTimeout is how long a request may take, whatever happens to
// its shard, before it is answered with an error: an API's request path can
// wait that long for a decision, and a failover, an election included, is
// over well within it (docs/cluster.md has the measured timeline).
const DefaultRequestTimeout = time.Second

// minRequestTimeout is the least RequestTimeout may be: below it, requests
// would be given up while a healthy leader commits them.
const minRequestTimeout = 10 * time.Millisecond

// DefaultRaftConfig returns the defaults for the node self of a cluster of
// nodes nodes. The Raft timeouts depend on it: a heartbeat timeout of 500 ms
// in a cluster (DefaultClusterHeartbeat), and of 100 ms for a single node,
// which has no network to wait for and elects itself at start within that.
// There is one shard per node, so that each node leads one. Layout and
// Control are left to set: Validate refuses a config without a Layout, and
// StartRaft one without a Control.
func DefaultRaftConfig(self Member, nodes int) RaftConfig {
	heartbeat := DefaultClusterHeartbeat
	if nodes == 1 {
		heartbeat = 100 * time.Millisecond
	}
	return RaftConfig{
		Self: self, Shards: max(nodes, 1),
		LogStore: persistence.DefaultLogFormat,
		Clock:    SystemClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Dial: tcpDial,
		HeartbeatTimeout: heartbeat, ElectionTimeout: heartbeat,
		// Frequent, small snapshots keep the log, and so the disk and a
		// restart's replay, small under constant load: a small shard's
		// snapshot is its live keys, written in milliseconds, while its log
		// grows with every decision. A large shard's snapshot is hundreds of
		// megabytes: it waits for its log to grow by a share of that.
		SnapshotThreshold: 4096, SnapshotInterval: 5 * time.Second, TrailingLogs: 1024,
		SnapshotLogPercent: DefaultSnapshotLogPercent,
		SnapshotNice:       DefaultSnapshotNice,
		RequestTimeout:     DefaultRequestTimeout,
		MaxClockOffset:     DefaultMaxClockOffset, SlowLogWrite: DefaultSlowLogWrite,
	}
}

// Validate returns an error naming the first setting that cannot work.
func (c RaftConfig) Validate() error {
	if err := validShards("RaftConfig", c.Shards); err != nil {
		return err
	}
	switch {
	case c.Self.ID == "":
		return invalidSetting("RaftConfig.Self.ID", "must not be empty")
	case c.Layout.Dir == "":
		return invalidSetting("RaftConfig.Layout", "names no data directory")
	case c.LogStore != persistence.LogWAL && c.LogStore != persistence.LogBolt:
		return invalidSetting("RaftConfig.LogStore", "%v: must be wal or bolt", c.LogStore)
	case c.Clock == nil:
		return invalidSetting("RaftConfig.Clock", "must be set")
	case c.Log == nil:
		return invalidSetting("RaftConfig.Log", "must be set")
	case c.Dial == nil:
		return invalidSetting("RaftConfig.Dial", "must be set")
	case c.BusTLS != nil && len(c.BusTLS.Certificate.Certificate) == 0:
		return invalidSetting("RaftConfig.BusTLS.Certificate", "must be set")
	case c.BusTLS != nil && c.BusTLS.CAs == nil:
		return invalidSetting("RaftConfig.BusTLS.CAs", "must be set")
	case c.HeartbeatTimeout < minHeartbeat || c.HeartbeatTimeout > maxTimeout:
		return invalidSetting("RaftConfig.HeartbeatTimeout", "%v: must be from %v to %v", c.HeartbeatTimeout, minHeartbeat, maxTimeout)
	case c.ElectionTimeout < c.HeartbeatTimeout || c.ElectionTimeout > maxTimeout:
		return invalidSetting("RaftConfig.ElectionTimeout", "%v: must be from HeartbeatTimeout (%v) to %v", c.ElectionTimeout, c.HeartbeatTimeout, maxTimeout)
	case c.SnapshotThreshold < 1:
		return invalidSetting("RaftConfig.SnapshotThreshold", "must be at least 1")
	case c.SnapshotLogPercent > MaxSnapshotLogPercent:
		return invalidSetting("RaftConfig.SnapshotLogPercent", "%d: must be from 0 to %d", c.SnapshotLogPercent, MaxSnapshotLogPercent)
	case c.RequestTimeout < minRequestTimeout || c.RequestTimeout > maxTimeout:
		return invalidSetting("RaftConfig.RequestTimeout", "%v: must be from %v to %v", c.RequestTimeout, minRequestTimeout, maxTimeout)
	case c.MaxClockOffset < time.Millisecond || c.MaxClockOffset > time.Hour:
		return invalidSetting("RaftConfig.MaxClockOffset", "%v: must be from 1ms to 1h", c.MaxClockOffset)
	case c.SlowLogWrite < time.Millisecond || c.SlowLogWrite > maxTimeout:
		return invalidSetting("RaftConfig.SlowLogWrite", "%v: must be from 1ms to %v", c.SlowLogWrite, maxTimeout)
	}
	if err := validSnapshotNice("RaftConfig", c.SnapshotNice); err != nil {
		return err
	}
	// What hashicorp/raft itself requires of the settings passed on to it
	// (SnapshotInterval's minimum among them).
	if err := raft.ValidateConfig(raftConfig(&c, "raft")); err != nil {
		return fmt.Errorf("RaftConfig: %w", err)
	}
	return nil
}

// validShards checks a shard count: the server's SCAN cursor carries the
// shard in ShardBits bits.
func validShards(config string, shards int) error {
	if shards < 1 || shards > MaxShards {
		return invalidSetting(config+".Shards", "%d: must be from 1 to %d", shards, MaxShards)
	}
	return nil
}

// invalidSetting is the error Validate returns about setting, the field's
// name.
func invalidSetting(setting, format string, args ...any) error {
	return fmt.Errorf("%s: %s", setting, fmt.Sprintf(format, args...))
}
