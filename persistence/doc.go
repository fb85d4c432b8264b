// Package persistence owns what rlserver keeps on disk: the layout of the
// data directory, the Raft log and stable store of each shard (raft-wal, or
// raft-boltdb v2 for the logs created so, with the options that make each
// safe and fast), the checksums on every entry, the snapshot store, and the
// versioned, checksummed frame around every snapshot.
//
//	DIR/rlserver.json            identity: format, node id, shard count
//	DIR/shards/000/wal/          shard 0's Raft log and votes (raft-wal)
//	DIR/shards/000/raft.db       or so, in the bbolt format
//	DIR/shards/000/snapshots/    shard 0's snapshots (newest two kept)
//	DIR/shards/001/...
package persistence
