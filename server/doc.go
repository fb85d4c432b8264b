// Package server is rlserver's network front: the listener and each
// connection's read loop (RESP parsed in place with redcon's ReadNextCommand),
// protocol limits, per-connection state (RESP2 or RESP3, name,
// authentication, transaction), pipeline draining, the built-in commands
// (PING, HELLO, CLIENT, COMMAND, INFO, CLUSTER ...) and reply encoding.
//
// A connection's pipeline is drained at once: its commands are parsed, grouped
// by shard into one request per shard, submitted together, and answered in
// request order with one write. The server reaches shard state only through
// the small Shards interface it declares, so it does not know whether Raft is
// behind it.
package server
