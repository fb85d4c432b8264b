// Package rls serves Envoy's rate limit service,
// envoy.service.ratelimit.v3.RateLimitService, over gRPC, so that Envoy,
// Istio, Envoy Gateway, Contour or Gloo ask rlserver directly instead of
// envoyproxy/ratelimit in front of a Redis.
//
// The limits come from YAML files in envoyproxy/ratelimit's format (a
// domain, nested descriptors, a rate_limit per descriptor), with a few
// rlserver extensions (an algorithm, a unit multiplier, whether refused
// hits count). Config holds a loaded set of files (config.go reads them,
// yaml.go checks every node and names the file and line of any fault);
// match.go finds the rule of a request's descriptor with
// envoyproxy/ratelimit's rules; Watcher (reload.go) loads a changed set
// again, keeping the old one when the new one is bad. The same limits can
// come over xDS instead, as Envoy Gateway sends them: LoadXDS
// (xds_config.go) makes RateLimitConfig resources into a Config with the
// files' checks, and XDS (xds.go, xds_stream.go) subscribes to a control
// plane for them, acknowledging what it puts in force and refusing what
// fails the checks.
//
// A request's counted descriptors become engine decisions (command.go) on
// the same shards the Redis protocol uses, batched per shard into one
// cluster.Request each and submitted together (decide.go); their decisions
// become the descriptor statuses (status.go), and, when asked for, the
// RateLimit and Retry-After response headers (headers.go). Counters with
// envoyproxy/ratelimit's meaning are kept per domain and rule (stats.go).
// server.go puts the service, the quota service and grpc.health.v1.Health
// on a grpc.Server.
//
// Envoy's quota service (RLQS, envoy.service.rate_limit_quota.v3) is Quota
// (rlqs.go): a config's quota sections map Envoy's bucket ids to limits
// (quota.go, quotayaml.go), and each stream (rlqsstream.go) reports its
// buckets' usage and is assigned each bucket's share of its limit as a
// token bucket (rlqsbucket.go), its grant from the shards' budget leases,
// RL.SHARE (rlqsassign.go, rlqsshards.go), on a timing that follows the
// stream's report interval (rlqstiming.go).
//
// The package talks to the shards through the small Shards interface it
// declares; it does not know whether Raft is behind them.
package rls
