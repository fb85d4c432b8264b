package metrics

import (
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server"
)

// Shards is what the metrics read of the shard layer: each shard's engine
// counters (cluster.MemoryShards and cluster.RaftShards provide them).
type Shards interface {
	Shards() int
	Stats(shard int) engine.Stats
}

// Raft describes this node's Raft replicas (cluster.RaftShards).
type Raft interface {
	RaftStates() []cluster.RaftState
}

// Server is the Redis-protocol server's own counters (server.Server).
type Server interface {
	Stats() server.Stats
}

// TopKeys lists the heaviest keys of the last minute over every shard
// (server.Server).
type TopKeys interface {
	TopKeys(denied bool, n int) ([]engine.TopKey, error)
}

// Readiness says whether the node can serve every shard: nil when it can,
// an error saying why not otherwise.
type Readiness interface {
	Ready() error
}

// Rebalance describes the cluster's rebalance (cluster/placement.Node).
type Rebalance interface {
	RebalanceStatus() cluster.RebalanceStatus
}

// Fitness is what this node's checks found of its clock and of its logs'
// disk (cluster.RaftShards, cluster/placement.Node): whether it may lead.
type Fitness interface {
	Fitness() cluster.Fitness
}

// Sources are what a Metrics reads when scraped. Shards and Server are
// required; Raft is nil in memory, and a nil Ready counts as always ready.
type Sources struct {
	Version string // rlserver's version, for rlserver_build_info
	Shards  Shards
	Raft    Raft
	Server  Server
	Ready   Readiness
	// Latency, when set, is the observer the server was configured with;
	// its histograms are exported.
	Latency *Latency
	// RaftSink, when set, is the go-metrics sink installed for
	// hashicorp/raft; its timings are exported.
	RaftSink *RaftSink
	// RLS, when set, is Envoy's rate limit service (--grpc-port); its
	// counters are exported.
	RLS RLS
	// RLQS, when set, is Envoy's quota service (on --grpc-port too); its
	// counters are exported.
	RLQS RLQS
	// XDS, when set, is the rate limit service's subscription to its
	// config over xDS; its state is exported.
	XDS XDS
	// HTTP, when set, is the decision API over HTTP (--http-port); its
	// requests and their durations are exported.
	HTTP HTTP
	// Top, when set, gives rlserver_top_key_decisions: the TopKeysMetric
	// heaviest keys of each outcome.
	Top TopKeys
	// Rebalance, when set (a cluster's node), gives rlserver_rebalance_*.
	Rebalance Rebalance
	// Fitness, when set (a node with Raft), gives rlserver_clock_*,
	// rlserver_may_lead and rlserver_raft_logs_*.
	Fitness Fitness
	// Federation, when set (--region), gives rlserver_federation_*.
	Federation Federation
}
