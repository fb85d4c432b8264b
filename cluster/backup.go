package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// Online backup (rlserver backup, RL.BACKUP) reads each shard's state at one
// committed index through what Raft already offers: the shard's leader takes
// a snapshot (hashicorp/raft's user snapshot, the FSM's own snapshot writer)
// and hands it over as the frame persistence wrote. Restore (rlserver
// restore) goes the other way, into a new data directory: the shard is
// bootstrapped as a first start bootstraps it, and the state is installed as
// the group's latest snapshot, which Raft restores at the next start.

// ShardBackup is one shard's state at one committed index.
type ShardBackup struct {
	Shard       int
	Index, Term uint64 // the Raft index and term of the state; 0 in memory
	Time        int64  // the shard's clock at that index (Unix ms)
	Size        int64  // bytes of Frame
	// Frame reads the state as persistence frames a snapshot
	// (persistence.WriteSnapshot). Close it when done.
	Frame io.ReadCloser
}

// ErrNotLeader reports a backup asked of a node that does not lead the
// shard: ask the leader (NotLeaderError names it).
var ErrNotLeader = errors.New("this node does not lead the shard")

// NotLeaderError is ErrNotLeader with the leader this node knows, if any.
type NotLeaderError struct {
	Shard  int
	Leader *Member // nil while unknown
}

func (e *NotLeaderError) Error() string {
	if e.Leader == nil {
		return fmt.Sprintf("shard %d: %v, and no leader is known", e.Shard, ErrNotLeader)
	}
	return fmt.Sprintf("shard %d: %v: ask %s (%s)", e.Shard, ErrNotLeader, e.Leader.ID, e.Leader.Client)
}

// Unwrap returns ErrNotLeader.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// backupTries bounds the snapshots Backup takes: one taken between its own
// and the opening of its own may leave nothing new to snapshot.
const backupTries = 3

// Backup takes shard's state at its leader's latest applied index, which is
// committed and holds every decision answered before Backup was called. It
// must be called on the shard's leader (a *NotLeaderError otherwise). The
// shard goes on deciding meanwhile: the state is captured between two
// batches, as for the snapshots Raft takes by itself.
func (n *RaftShards) Backup(ctx context.Context, shard int) (ShardBackup, error) {
	if shard < 0 || shard >= n.cfg.Shards {
		return ShardBackup{}, fmt.Errorf("no shard %d: this cluster has %d", shard, n.cfg.Shards)
	}
	g := n.groups[shard].Load()
	if g == nil || g.raft.State() != raft.Leader {
		leader, _, ok := n.Leader(shard)
		e := &NotLeaderError{Shard: shard}
		if ok {
			e.Leader = &leader
		}
		return ShardBackup{}, e
	}
	var err error
	for range backupTries {
		// An entry through the log first: the snapshot then holds every
		// decision answered before it, and has something new to take.
		if _, err = Do(ctx, n, shard, engine.Command{Op: engine.OpDBSize}); err != nil {
			return ShardBackup{}, err
		}
		f := g.raft.Snapshot()
		if err = f.Error(); errors.Is(err, raft.ErrNothingNewToSnapshot) {
			continue
		}
		if leadershipMoving(err) {
			// A snapshot is the leader's: it moved (or is being handed
			// over, as after a start), and the caller asks the next one.
			return ShardBackup{}, retryError(shard, "", ErrNotApplied, "its leadership is moving: "+err.Error())
		}
		if err != nil {
			return ShardBackup{}, fmt.Errorf("shard %d snapshot: %w", shard, err)
		}
		meta, rc, oerr := f.Open()
		if oerr != nil {
			err = oerr // reaped by later snapshots already: take another
			continue
		}
		b := ShardBackup{Shard: shard, Index: meta.Index, Term: meta.Term, Size: meta.Size}
		b.Frame, b.Time, err = withTime(rc)
		if err != nil {
			rc.Close()
			return ShardBackup{}, fmt.Errorf("shard %d snapshot: %w", shard, err)
		}
		return b, nil
	}
	return ShardBackup{}, fmt.Errorf("shard %d snapshot: %w", shard, err)
}

// leadershipMoving reports whether err is hashicorp/raft's word for a
// leadership that is changing hands.
func leadershipMoving(err error) bool {
	return errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost)
}

// Backup takes shard's state between two of its batches.
func (m *MemoryShards) Backup(_ context.Context, shard int) (ShardBackup, error) {
	if shard < 0 || shard >= len(m.shards) {
		return ShardBackup{}, fmt.Errorf("no shard %d: this node has %d", shard, len(m.shards))
	}
	r := &m.shards[shard].replica
	r.mu.Lock()
	c, now := r.startCapture(), r.shard.Stats().Now
	r.mu.Unlock()
	defer c.end(nil, "")
	var frame bytes.Buffer
	if err := c.writeFrame(&frame); err != nil {
		return ShardBackup{}, err
	}
	return ShardBackup{Shard: shard, Time: now, Size: int64(frame.Len()), Frame: io.NopCloser(&frame)}, nil
}

// withTime reads the shard's clock from the head of a snapshot frame (its
// payload starts with it, engine.AppendSnapshot), without consuming it.
func withTime(rc io.ReadCloser) (io.ReadCloser, int64, error) {
	br := bufio.NewReaderSize(rc, 64<<10)
	head, err := br.Peek(16 + binary.MaxVarintLen64)
	if err != nil && len(head) <= 16 {
		return nil, 0, fmt.Errorf("%w: %v", persistence.ErrBadSnapshot, err)
	}
	now, n := binary.Varint(head[16:])
	if n <= 0 {
		return nil, 0, fmt.Errorf("%w: no clock", persistence.ErrBadSnapshot)
	}
	return struct {
		io.Reader
		io.Closer
	}{br, rc}, now, nil
}

// restoredTerm is the term of a restored shard's snapshot: the term its
// bootstrap entry has, as a first start writes it.
const restoredTerm = 1

// InstallBackup makes shard's replica in a new data directory start from
// frame (a snapshot frame, as Backup reads it), taken at index: it
// bootstraps the group as a new cluster's first start would (the same
// configuration: replicas, the shard's initial replicas), then stores the
// state as the group's latest snapshot, at index (at least 2, after the
// bootstrap entry) and the bootstrap's term. Every replica of a new cluster
// installed from the same backup holds the same snapshot at the same index,
// so they start in agreement. A shard directory that already holds state is
// refused.
func InstallBackup(cfg RaftConfig, shard int, replicas []Member, index uint64, frame io.Reader) (err error) {
	// Not cfg.Validate: nothing listens while a data directory is prepared.
	if shard < 0 || shard >= cfg.Shards {
		return fmt.Errorf("no shard %d: the node has %d", shard, cfg.Shards)
	}
	dir, err := cfg.Layout.ShardDir(shard)
	if err != nil {
		return err
	}
	store, err := persistence.OpenLogStore(dir, cfg.LogStore, newRaftLogger(cfg.Log, "wal"))
	if err != nil {
		return err
	}
	defer store.Close()
	snaps, err := persistence.OpenSnapshotStore(dir, newRaftLogger(cfg.Log, "snapshots"))
	if err != nil {
		return err
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.Self.Bus))
	defer trans.Close()
	conf := voters(replicas)
	if err := raft.BootstrapCluster(raftConfig(&cfg, fmt.Sprintf("raft.shard%d", shard)), store, store, snaps, trans, conf); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("shard %d: %s already holds state: restore into a new data directory", shard, dir)
		}
		return fmt.Errorf("shard %d bootstrap: %w", shard, err)
	}
	sink, err := snaps.Create(raft.SnapshotVersionMax, max(index, 2), restoredTerm, conf, 1, trans)
	if err != nil {
		return fmt.Errorf("shard %d snapshot: %w", shard, err)
	}
	if _, err := io.Copy(sink, frame); err != nil {
		sink.Cancel()
		return fmt.Errorf("shard %d snapshot: %w", shard, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("shard %d snapshot: %w", shard, err)
	}
	// The snapshot holds the configuration the bootstrap entry carried.
	// Without that entry the log starts after the snapshot, with no gap,
	// which the WAL (a store that refuses gaps) needs.
	if err := store.DeleteRange(1, 1); err != nil {
		return fmt.Errorf("shard %d: drop the bootstrap entry: %w", shard, err)
	}
	return nil
}
