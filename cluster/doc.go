// Package cluster owns rlserver's shards: it maps keys to hash slots and
// slots to shards (slot.go), and runs every shard's engine, either in memory
// or replicated as a Raft group per shard. The server sees one interface
// either way, and does not know whether Raft is on.
//
// A shard's commands arrive as Requests, each one connection's commands for
// that shard, through Submit (Do submits and waits for the results). Both
// runners apply them the same way (apply.go): whole requests gathered into a
// batch (in memory, a batch of one), stamped with one reading of the clock, applied with one engine call
// as one atomic step, their decisions counted and the write observer
// (observe.go) told before any of them is answered. A shard without traffic
// sweeps its expired keys on a timer.
//
// MemoryShards (memory.go) applies each request on the goroutine that
// submits it, under its shard's lock, with no files: state lives only as
// long as the process.
//
// RaftShards (raftnode.go; started in raftstart.go, routing in
// raftroute.go) runs this node's replicas, each shard a Raft group
// (hashicorp/raft) of up to three nodes (topology.go), with its log and
// snapshots in the data directory (package persistence; group.go). The
// shard leader's proposer (proposer.go, groupcommit.go) packs a batch into
// one log entry stamped with the leader's time (codec.go), and every
// replica's state machine (fsm.go) decodes the entry and applies it, so all
// replicas reach the same state. A request for a shard another node leads is
// forwarded to it (forward.go, forwarder.go) over the bus, the one listener
// that carries Raft and forwarding (transport.go), with mutual TLS when
// configured (bustls.go). A request that finds no leader waits for an
// election, and every request is answered by its deadline (Request.Expire):
// a request forwarded to a leader that was replaced is given up at once.
// Leaders are spread over the nodes (balance.go);
// Ready (ready.go) says when every shard can serve; Topology and RaftStates
// (view.go) describe the shards for CLUSTER, INFO and metrics.
// hashicorp/raft's own records go to the node's logger at levels chosen for
// operators (raftlog.go).
//
// Both runners take a configuration: start from DefaultMemoryConfig or
// DefaultRaftConfig, which Validate checks before anything starts
// (config.go).
package cluster
