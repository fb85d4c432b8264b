package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server/acl"
)

// Config is the server's configuration. Start from DefaultConfig: a zero
// Config is not valid (Validate says why), so no setting left out means
// something by accident.
type Config struct {
	// Limits bounds what one command may make the server hold.
	Limits Limits
	// MaxClients bounds the connections open at once (maxclients).
	MaxClients int
	// Users are who clients authenticate as: acl.Load's, from an aclfile,
	// or acl.New's default user alone, with or without a password.
	Users *acl.Users
	// ProtectedMode refuses clients that are not on loopback while the
	// default user takes no password (see protected.go), as Redis's
	// protected-mode yes.
	ProtectedMode bool
	// IdleTimeout closes a connection that has sent no command for that
	// long, as Redis's timeout; 0 never does.
	IdleTimeout time.Duration
	// RequestTimeout bounds how long a command waits for its shard:
	// whatever happens to the shard (an election, a leader that died or
	// froze), it is answered by then, with an error that says whether it
	// may have been counted.
	RequestTimeout time.Duration
	// Version is rlserver's version, reported by INFO.
	Version string
	// ConfigFile is reported by INFO (empty when none was used).
	ConfigFile string
	// Shutdown bounds how long Close waits for connections to finish their
	// current pipeline.
	Shutdown time.Duration
	// Cluster, when set, makes the server answer as a cluster node: CLUSTER
	// SLOTS, SHARDS and NODES describe the cluster, clients that asked for
	// them get MOVED for slots led elsewhere (others are served by
	// forwarding), and multi-key commands must stay within one slot. Nil: a
	// standalone server.
	Cluster Cluster
	// ClusterChanges, when set with Cluster, changes the cluster's
	// membership and placement online (CLUSTER MOVESHARD, REBALANCE,
	// FORGET). Nil: those are refused.
	ClusterChanges ClusterChanger
	// Raft, when set, adds the shards' Raft state to INFO. Nil in memory.
	Raft RaftInfo
	// AnswersInSubmit says that the shards answer every request before
	// their Submit returns (cluster.MemoryShards): an event loop then
	// answers a pipeline straight through. Otherwise (durable shards, a
	// cluster's) it suspends a pipeline whose requests are not answered
	// yet, and goes on with other connections (loopwait.go).
	AnswersInSubmit bool
	// Federated says the node is a region of a federation (--region):
	// GLOBAL decisions and policies are refused otherwise, as no other
	// region could ever grant them a block.
	Federated bool
	// Federation, when set, is the region's federation, for INFO
	// federation.
	Federation Federation
	// Backups, when set, takes shards' state for RL.BACKUP
	// (cluster.RaftShards, cluster.MemoryShards). Nil: RL.BACKUP is
	// refused.
	Backups BackupSource
	// DataDir is the data directory, for INFO (empty in memory).
	DataDir string
	// MaxMemory bounds the memory the keys hold (see MemoryLimit).
	MaxMemory MemoryLimit
	// Observer, when set, is told how long commands took to answer (for
	// latency metrics). Nil: nothing is timed.
	Observer Observer
	// TrackingMaxKeys bounds the keys remembered for client-side caching
	// (CLIENT TRACKING), as Redis's tracking-table-max-keys: when the table
	// is full, every tracking connection is told to drop its whole cache.
	TrackingMaxKeys int
	// Clock is the time decisions use, the one the shards stamp their
	// batches with: TIME and INFO report it.
	Clock Clock
	// Debug, when set, enables the DEBUG command: DEBUG CLOCK moves it. It
	// must be Clock itself. Nil: DEBUG is refused.
	Debug DebugClock
	// DebugDisk, when set with Debug, is what DEBUG DISK injects faults
	// into: a durable node's logs. Nil: DEBUG DISK is refused.
	DebugDisk DebugDisk
	// EventLoops, when positive, serves plain TCP connections on that many
	// event loops (eventloop_linux.go) instead of a goroutine each; TLS
	// connections keep theirs. Over shards that answer a request after
	// Submit returns, the loops suspend a pipeline rather than wait
	// (loopwait.go). Only where EventLoopsSupported.
	EventLoops int
}

// DefaultConfig is the configuration rlserver starts with when no setting
// says otherwise: Redis's limits and defaults where Redis has the setting, the
// default user alone without a password (so protected mode refuses remote
// clients), the system clock, and no DEBUG.
func DefaultConfig() Config {
	return Config{
		Limits: Limits{
			MaxBulkLen:    512 << 10,
			MaxArgs:       4096,
			MaxRequestLen: 4 << 20,
			MaxKeyLen:     1024,
		},
		MaxClients:      10_000,
		Users:           acl.New(""),
		ProtectedMode:   true,
		Shutdown:        5 * time.Second,
		RequestTimeout:  cluster.DefaultRequestTimeout,
		MaxMemory:       MemoryLimit{Policy: engine.NoEviction},
		TrackingMaxKeys: 1_000_000, // Redis's tracking-table-max-keys
		Clock:           cluster.SystemClock{},
	}
}

// errInvalidConfig is what every error of Validate wraps.
var errInvalidConfig = errors.New("invalid server configuration")

// minRequestLen is the least MaxRequestLen may be: below it, not even the
// shortest commands fit.
const minRequestLen = 16

// Validate reports the first setting the server cannot run with, naming it.
func (c Config) Validate() error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errInvalidConfig, fmt.Sprintf(format, args...))
	}
	l := c.Limits
	switch {
	case l.MaxBulkLen < 1:
		return invalid("max-bulk-len must be at least 1, not %d", l.MaxBulkLen)
	case l.MaxArgs < 1:
		return invalid("max-args must be at least 1, not %d", l.MaxArgs)
	case l.MaxRequestLen < minRequestLen:
		return invalid("max-request-len must be at least %d, not %d", minRequestLen, l.MaxRequestLen)
	case l.MaxKeyLen < 1:
		return invalid("max-key-len must be at least 1, not %d", l.MaxKeyLen)
	case c.MaxClients < 1:
		return invalid("maxclients must be at least 1, not %d", c.MaxClients)
	case c.Users == nil:
		return invalid("users must be set (acl.New or acl.Load)")
	case c.IdleTimeout < 0:
		return invalid("timeout must not be negative (0: never), not %v", c.IdleTimeout)
	case c.RequestTimeout <= 0:
		return invalid("request-timeout must be positive, not %v", c.RequestTimeout)
	case c.Shutdown <= 0:
		return invalid("shutdown must be positive, not %v", c.Shutdown)
	case c.MaxMemory.Bytes < 0:
		return invalid("maxmemory must not be negative (0: no limit), not %d", c.MaxMemory.Bytes)
	case int(c.MaxMemory.Policy) >= len(engine.MemoryPolicyNames):
		return invalid("maxmemory-policy %d is not a policy", c.MaxMemory.Policy)
	case c.TrackingMaxKeys < 1:
		return invalid("tracking-table-max-keys must be at least 1, not %d", c.TrackingMaxKeys)
	case c.Clock == nil:
		return invalid("clock must be set")
	case c.EventLoops < 0:
		return invalid("event-loops must not be negative (0: a goroutine per connection), not %d", c.EventLoops)
	case c.EventLoops > 0 && !EventLoopsSupported:
		return invalid("event loops need Linux's epoll: set event-loops to 0")
	case c.Debug != nil && Clock(c.Debug) != c.Clock:
		return invalid("debug must be the clock itself, or DEBUG CLOCK would move another clock than the one decisions use")
	}
	return nil
}
