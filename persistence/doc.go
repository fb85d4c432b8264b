// Package persistence owns what rlserver keeps on disk: the layout of the
// data directory, the Raft log and stable store of each shard (raft-boltdb v2
// with the options that make it safe and fast), the snapshot store, and the
// versioned, checksummed frame around every snapshot.
//
//	DIR/rlserver.json            identity: format, node id, shard count
//	DIR/shards/000/raft.db       shard 0's Raft log and votes (bbolt)
//	DIR/shards/000/snapshots/    shard 0's snapshots (newest two kept)
//	DIR/shards/001/...
package persistence
