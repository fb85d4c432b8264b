package persistence

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// ErrInUse reports a shard store that another process holds open.
var ErrInUse = errors.New("data directory is in use by another rlserver")

// Store is a group's Raft log and stable store (its votes and term), in
// one of the LogFormats.
type Store interface {
	raft.LogStore
	raft.StableStore
	io.Closer
	// Path is the store's file or directory, for errors to name.
	Path() string
	// IsMonotonic says whether the store refuses gaps between entries
	// (raft.MonotonicLogStore; part of Store so that wrappers pass it on).
	IsMonotonic() bool
}

// OpenLogStore opens the Raft log and stable store of the group in dir: in
// the format it already has, or, when dir holds neither, a new store in
// format newStore. Either format fsyncs every append before it returns
// (never a NoSync mode: that loses votes and entries on power loss), and
// refuses with ErrInUse a store another process holds open. A bbolt file
// cut short, or a WAL that does not read back, is refused with
// ErrDamagedLog. The WAL logs through logger.
func OpenLogStore(dir string, newStore LogFormat, logger hclog.Logger) (Store, error) {
	format, err := logFormatFor(dir, newStore)
	if err != nil {
		return nil, err
	}
	switch format {
	case LogWAL:
		return openWAL(WALPath(dir), logger)
	case LogBolt:
		return openLogStoreAt(logStorePath(dir))
	}
	return nil, fmt.Errorf("open the Raft log in %s: unknown format %d", dir, format)
}

// logFormatFor is the format of the log in dir, or newStore when dir holds
// none yet.
func logFormatFor(dir string, newStore LogFormat) (LogFormat, error) {
	format, err := StoredLogFormat(dir)
	if err == nil && format == LogNone {
		format = newStore
	}
	return format, err
}

// logStorePath is the file of a group's log and stable store in the bbolt
// format.
func logStorePath(dir string) string {
	return filepath.Join(dir, "raft.db")
}

// boltStore is a raft-boltdb store and its file.
type boltStore struct {
	*raftboltdb.BoltStore
	path string
}

// Path is the store's file.
func (s boltStore) Path() string { return s.path }

// IsMonotonic is false: bbolt keeps entries by index and takes gaps.
func (s boltStore) IsMonotonic() bool { return false }

// openLogStoreAt opens the bbolt log store at path. bbolt's free list is
// kept in memory instead of being rewritten on every commit, and the open
// gives up after a second when another process holds the file.
func openLogStoreAt(path string) (Store, error) {
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
	return boltStore{store, path}, nil
}

// snapshotsRetained is how many snapshots a shard keeps: the newest, and one
// to fall back on.
const snapshotsRetained = 2

// OpenSnapshotStore opens a shard's snapshot directory; the store logs
// through logger. Raft's file store is told to keep one snapshot more than
// snapshotsRetained: the store deletes that one itself (reapShrinking).
func OpenSnapshotStore(shardDir string, logger hclog.Logger) (*SnapshotStore, error) {
	store, err := raft.NewFileSnapshotStoreWithLogger(shardDir, snapshotsRetained+1, logger)
	if err != nil {
		return nil, fmt.Errorf("open snapshots in %s: %w", shardDir, err)
	}
	return &SnapshotStore{FileSnapshotStore: store, dir: filepath.Join(shardDir, snapshotsDir)}, nil
}
