// Package cluster is rlserver's data plane: it maps keys to hash slots and
// slots to shards (slot.go), and runs every shard's engine, either in
// memory or replicated as a Raft group per shard. The server sees one
// interface either way, and does not know whether Raft is on.
//
// A shard's commands arrive as Requests, each one connection's commands for
// that shard, through Submit (Do submits and waits for the results;
// request.go). Both runners apply them the same way (apply.go): whole
// requests gathered into a batch (in memory, a batch of one), stamped with
// one reading of the clock, applied with one engine call as one atomic
// step, their decisions counted and the write observer (observe.go) told
// before any of them is answered. A shard without traffic sweeps its
// expired keys on a timer.
//
// MemoryShards (memory.go) applies each request on the goroutine that
// submits it, under its shard's lock, with no files: state lives only as
// long as the process.
//
// RaftShards (node.go, started in start.go) runs this node's replicas, each
// a Raft group of up to three nodes (group.go), with its log and snapshots
// in the data directory (package persistence) and hashicorp/raft's
// behaviour corrected where it must be (package raftfix). The shard
// leader's proposer (proposer.go, groupcommit.go) packs a batch into one log
// entry stamped with the leader's time (codec.go), and every replica's
// state machine (fsm.go, resultclaim.go) decodes the entry and applies it,
// so all replicas reach the same state. A request for a shard another node
// leads is routed to it (route.go) and forwarded over the bus (forward.go,
// forwarder.go, muxconn.go, muxserve.go), the one listener that carries
// Raft, forwarding and the control plane's calls (transport.go), with
// mutual TLS when configured (bustls.go). A request that finds no leader
// waits for an election, and every request is answered by its deadline
// (Request.Expire): a request forwarded to a leader that was replaced is
// given up at once. Ready (ready.go) says when every shard can serve;
// RaftStates (view.go) describes the replicas for INFO and metrics.
// hashicorp/raft's own records go to the node's logger at levels chosen for
// operators (raftlog.go).
//
// Which replicas a node holds is not the data plane's to decide. The
// control plane (package cluster/placement) keeps the cluster's catalogue
// (catalogue.go: the members, and where each shard's replicas are and
// should be), opens and drops this node's replicas (replicas.go), changes
// the groups it leads towards their targets one configuration change at a
// time (groupchange.go), and answers the bus's control calls
// (controlstream.go, joining.go): the data plane declares what it needs of
// it (ControlPlane, control.go), and reaches it only through that. Backup
// and restore (backup.go) and break-glass recovery (recover.go) work on a
// node's groups.
//
// Both runners take a configuration: start from DefaultMemoryConfig or
// DefaultRaftConfig, which Validate checks before anything starts
// (config.go).
package cluster
