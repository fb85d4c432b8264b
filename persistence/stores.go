package persistence

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// ErrInUse reports a shard store that another process holds open.
var ErrInUse = errors.New("data directory is in use by another rlserver")

// OpenLogStore opens a shard's Raft log and stable store. It fsyncs every
// append (never NoSync: that loses votes and entries on power loss), keeps
// bbolt's free list in memory instead of rewriting it on every commit, and
// gives up after a second when another process holds the file. A file cut
// short is refused with ErrDamagedLog.
func OpenLogStore(shardDir string) (*raftboltdb.BoltStore, error) {
	return openLogStoreAt(LogStorePath(shardDir))
}

// LogStorePath is the file of a shard's Raft log and stable store.
func LogStorePath(shardDir string) string {
	return filepath.Join(shardDir, "raft.db")
}

// openLogStoreAt is OpenLogStore for the file at path.
func openLogStoreAt(path string) (*raftboltdb.BoltStore, error) {
	if err := checkLength(path); err != nil {
		return nil, err
	}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path: path,
		BoltOptions: &bbolt.Options{
			Timeout:        time.Second,
			NoFreelistSync: true,
			FreelistType:   bbolt.FreelistMapType,
		},
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return store, nil
}

// SnapshotsRetained is how many snapshots a shard keeps: the newest, and one
// to fall back on.
const SnapshotsRetained = 2

// OpenSnapshotStore opens a shard's snapshot directory; the store logs
// through logger.
func OpenSnapshotStore(shardDir string, logger hclog.Logger) (*raft.FileSnapshotStore, error) {
	store, err := raft.NewFileSnapshotStoreWithLogger(shardDir, SnapshotsRetained, logger)
	if err != nil {
		return nil, fmt.Errorf("open snapshots in %s: %w", shardDir, err)
	}
	return store, nil
}
