package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// BackupSource is what RL.BACKUP needs of the shards (cluster.RaftShards
// and cluster.MemoryShards): one shard's state at one committed index.
type BackupSource interface {
	Backup(ctx context.Context, shard int) (cluster.ShardBackup, error)
}

// backup is RL.BACKUP shard: [shard, index, term, time_ms, taken_ms, size,
// frame], the frame a bulk string of the shard's state as a snapshot frame.
// Another node's shard is answered with MOVED to its leader (the first slot
// of the shard's range), or TRYAGAIN while it has none.
func (c *conn) backup(args [][]byte, out []byte) []byte {
	shard, err := commands.ParseBackup(args)
	if err != nil {
		return appendError(out, err)
	}
	src := c.srv.cfg.Backups
	if src == nil {
		return appendError(out, errors.New("ERR this node cannot take backups"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.RequestTimeout)
	defer cancel()
	b, err := src.Backup(ctx, shard)
	var nl *cluster.NotLeaderError
	switch {
	case errors.As(err, &nl) && nl.Leader != nil:
		first, _ := cluster.SlotRange(shard, c.srv.shards.Shards())
		return appendError(out, fmt.Errorf("MOVED %d %s", first, nl.Leader.Client))
	case errors.As(err, &nl):
		return appendError(out, fmt.Errorf("TRYAGAIN shard %d has no leader now", shard))
	case err != nil && errorWord(err) != "":
		return appendError(out, err)
	case err != nil:
		return appendError(out, fmt.Errorf("ERR backup of shard %d: %w", shard, err))
	}
	defer b.Frame.Close()
	head := len(out)
	out = resp.AppendArray(out, 7)
	for _, v := range []int64{int64(b.Shard), int64(b.Index), int64(b.Term), b.Time, time.Now().UnixMilli(), b.Size} {
		out = resp.AppendInt(out, v)
	}
	out, frame := resp.AppendBulkSpace(out, int(b.Size))
	if _, err := io.ReadFull(b.Frame, frame); err != nil {
		return appendError(out[:head], fmt.Errorf("ERR backup of shard %d: reading the snapshot: %w", shard, err))
	}
	return out
}
