// Package metrics exposes rlserver to Prometheus, with /healthz and /readyz
// beside /metrics on one HTTP listener (--metrics-port).
//
// Almost every figure is read when Prometheus scrapes, from the counters
// INFO reads (the engine's per-shard Stats, the server's Stats, the Raft
// states), so the two always agree and the hot path pays nothing for them.
// Two things are recorded as they happen: command latency, through the
// server's Observer hook (two atomic adds per pipeline and class, see
// Latency), and hashicorp/raft's own timings of snapshots, log writes and
// commits, bridged from go-metrics (see RaftSink).
//
// The package declares the small interfaces it reads (Shards, Raft,
// Server, Readiness) so that it depends on no implementation; cmd/rlserver
// wires it. Metric names are listed in docs/operations.md.
package metrics
