// Package server is rlserver's network front: the listener and each
// connection's read loop (RESP parsed in place with redcon's ReadNextCommand),
// protocol limits, per-connection state (RESP2 or RESP3, name,
// authentication, transaction), pipeline draining, the built-in commands
// (PING, HELLO, CLIENT, COMMAND, INFO, CLUSTER ...) and the replies to the
// engine's results (written with internal/resp).
//
// A connection's pipeline is drained at once: its commands are parsed, grouped
// by shard into one request per shard, submitted together, and answered in
// request order with one write. The server reaches shard state only through
// the small Shards interface it declares, so it does not know whether Raft is
// behind it.
//
// Where things are: server.go has the Server and what it needs from the
// layers below, config.go its configuration; accept.go takes connections and
// puts TLS (tls.go), the drain (drain.go) and the protocol guard (guard.go)
// over each; conn.go is a connection's state, connloop.go its read, answer
// and write loop on a goroutine of its own, eventloop_linux.go and
// loopsock_linux.go the event loops that serve plain connections instead,
// loopwait.go and loopwait_linux.go how a loop suspends a pipeline for
// shards that answer after Submit returns (durable, a cluster's), or for a
// command a goroutine answers aside, and resumes it, dispatch.go the path of
// one command, batch.go the keyed commands on their way to the shards,
// reply.go the replies to the engine's results. The built-in commands are in
// files named after them (handshake.go: HELLO, AUTH, SELECT; clientcmd.go:
// CLIENT; aclcmd.go, memorycmd.go, commandinfo.go, info.go, introspect.go:
// CONFIG, TIME; shardwide.go: DBSIZE, FLUSHALL, SCAN, DEBUG; cluster.go,
// multi.go, policy.go, tracking.go); subcommands.go is the table through
// which every subcommand is answered. The users and their permissions are
// package acl.
package server
