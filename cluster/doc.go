// Package cluster owns rlserver's shards: the mapping of keys to hash slots
// and of slots to shards, the leader's clock, and the runners that apply
// commands to each shard's engine.
//
// A shard's commands arrive as Requests, each one connection's commands for
// that shard. A runner takes every Request waiting, stamps the batch with one
// reading of the clock, applies each Request to the engine atomically, and
// signals its connection. In memory-only mode the runner is a goroutine per
// shard; the server sees the same interface either way.
package cluster
