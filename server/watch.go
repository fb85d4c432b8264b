package server

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// WATCH makes the next EXEC a compare-and-set: WATCH reads each key's
// fingerprint from its shard, and EXEC sends, ahead of the transaction's
// commands and in the same request, a guard a key that the shard checks as
// it applies them (engine/watch.go). A guard that fails skips the whole
// transaction, and EXEC answers a null array, as Redis's does when a
// watched key changed. For the guards and the transaction to be one step
// of one shard, the watched keys share a hash slot, and the transaction's
// keys share it too (CROSSSLOT otherwise, even on a standalone server, as
// for MULTI's commands).

var (
	errWatchInMulti = errors.New("ERR WATCH inside MULTI is not allowed")
	watchSpec       = commands.Lookup([]byte("watch"))
)

// watchState is what WATCH remembers until EXEC, DISCARD, UNWATCH or RESET.
type watchState struct {
	slot   int      // the watched keys' slot, when there are keys
	keys   [][]byte // the watched keys, each once, copied
	prints [][]byte // their fingerprints when watched ("" for absent)
	bytes  int64    // what the guards add to EXEC's request
}

// watch is WATCH key [key ...].
func (c *conn) watch(args [][]byte, out []byte) []byte {
	if c.tx.active {
		return appendError(out, errWatchInMulti)
	}
	if err := checkKeys(watchSpec, args, c.srv.cfg.Limits.MaxKeyLen); err != nil {
		return appendError(out, err)
	}
	slot := -1
	if len(c.watching.keys) > 0 {
		slot = c.watching.slot
	}
	for _, k := range args[1:] {
		s := int(cluster.Slot(k))
		if slot >= 0 && s != slot {
			return appendError(out, commands.ErrCrossSlot)
		}
		slot = s
	}
	if err := c.checkRoute(watchSpec, args); err != nil {
		return appendError(out, err)
	}
	w := c.watching
	for _, k := range args[1:] {
		if w.watches(k) {
			continue
		}
		r, err := c.srv.shards.Read(c.srv.shards.ShardOf(uint16(slot)), engine.Command{Op: engine.OpWatch, Key: k})
		if err == nil && r.Type == engine.ResError {
			err = r.Err
		}
		if err != nil {
			return appendError(out, err)
		}
		w.keys = append(w.keys, append([]byte(nil), k...))
		w.prints = append(w.prints, []byte(r.Text))
		w.bytes += int64(len(k) + len(r.Text) + 32)
	}
	if limit := c.srv.cfg.Limits.MaxRequestLen; w.bytes > limit {
		return appendError(out, fmt.Errorf("ERR the watched keys are longer than the %d bytes a request may carry (--max-request-len)", limit))
	}
	w.slot = slot
	c.watching = w
	return resp.AppendOK(out)
}

// watches reports whether key is watched already.
func (w *watchState) watches(key []byte) bool {
	for _, k := range w.keys {
		if string(k) == string(key) {
			return true
		}
	}
	return false
}

// unwatch forgets the watched keys.
func (c *conn) unwatch() {
	clear(c.watching.keys)
	clear(c.watching.prints)
	c.watching = watchState{keys: c.watching.keys[:0], prints: c.watching.prints[:0]}
}

// addGuards adds, for EXEC, a guard a watched key, ahead of the queued
// commands (replies of them, after it) that an aborted EXEC leaves out. It
// returns where the guards are, for guardTransaction.
func (b *batch) addGuards(s *Server, w *watchState, replies int) (first int) {
	first = len(b.shardOf)
	b.replies = append(b.replies, pending{spec: watchSpec, first: int32(first), n: int32(len(w.keys)), skip: int32(replies)})
	shard := s.shards.ShardOf(uint16(w.slot))
	r := b.request(shard)
	if len(r.Cmds) == 0 {
		b.used = append(b.used, shard)
	}
	for i, k := range w.keys {
		b.shardOf = append(b.shardOf, int32(shard))
		b.posOf = append(b.posOf, int32(len(r.Cmds)))
		r.Cmds = append(r.Cmds, engine.Command{Op: engine.OpWatch, Key: k, Value: w.prints[i], Args: [4]int64{engine.WatchGuard}})
	}
	return first
}

// guardTransaction tells each guard from first on how many commands it
// guards: those after it, up to the transaction's last, all in its
// request (one slot, one shard).
func (b *batch) guardTransaction(first, guards int) {
	last := len(b.shardOf)
	for i := first; i < first+guards; i++ {
		b.reqs[b.shardOf[i]].Cmds[b.posOf[i]].Args[1] = int64(last - i - 1)
	}
}

// encodeGuards encodes EXEC's header: the array of the transaction's
// replies when every guard held, a null array when one did not (or the
// request's error). It reports whether the replies that follow are left out.
func (b *batch) encodeGuards(out []byte, p pending, resp3 bool) ([]byte, bool) {
	r := b.reqs[b.shardOf[p.first]]
	if r.Err != nil {
		return appendError(out, r.Err), true
	}
	for i := p.first; i < p.first+p.n; i++ {
		switch res := &r.Results[b.posOf[i]]; res.Type {
		case engine.ResOK:
		case engine.ResError:
			return appendError(out, res.Err), true
		default:
			return resp.AppendNullArray(out, resp3), true
		}
	}
	return resp.AppendArray(out, int(p.skip)), false
}
