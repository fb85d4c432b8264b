package server

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// A transaction's keyed commands must share one hash slot, so that EXEC is
// one request to one shard, applied as one atomic step. Being one request,
// its commands together may not be longer than one command may
// (MaxRequestLen); a doomed transaction keeps nothing it queues.

var (
	errNestedMulti   = errors.New("ERR MULTI calls can not be nested")
	errExecNoMulti   = errors.New("ERR EXEC without MULTI")
	errDiscardNoMult = errors.New("ERR DISCARD without MULTI")
	errExecAbort     = errors.New("EXECABORT Transaction discarded because of previous errors.")
	errNotInMulti    = errors.New("ERR Command not allowed inside a transaction")
)

// transaction is the state between MULTI and EXEC.
type transaction struct {
	active bool
	dirty  bool  // a command was refused while queueing: EXEC aborts
	slot   int   // the slot of the queued keys, -1 before the first
	bytes  int64 // the queued commands' length, as sent in RESP
	queued []queuedCommand
}

type queuedCommand struct {
	spec *commands.Spec
	args [][]byte
}

func (t *transaction) reset() {
	clear(t.queued)
	*t = transaction{slot: -1, queued: t.queued[:0]}
}

// markDirty dooms an open transaction: EXEC will abort, so what it queued
// can go.
func (t *transaction) markDirty() {
	if t.active {
		t.dirty = true
		clear(t.queued)
		t.queued = t.queued[:0]
	}
}

// endsTransaction reports the commands that act at once inside MULTI instead
// of being queued.
func endsTransaction(id commands.ID) bool {
	switch id {
	case commands.IDExec, commands.IDDiscard, commands.IDMulti, commands.IDQuit, commands.IDResetConn, commands.IDWatch:
		return true
	}
	return false
}

// allowedInTransaction reports the server commands that may be queued: ones
// that touch neither other shards nor the connection's state.
func allowedInTransaction(id commands.ID) bool {
	return id == commands.IDPing || id == commands.IDEcho || id == commands.IDTime || id == commands.IDUnwatch
}

// queue validates a command inside MULTI and queues it, answering QUEUED, or
// refuses it and dooms the transaction.
func (c *conn) queue(spec *commands.Spec, args [][]byte) {
	err := c.checkQueueable(spec, args)
	if err == nil && !c.tx.dirty {
		err = c.checkTransactionSize(args)
	}
	if err != nil {
		c.batch.addError(err)
		c.tx.markDirty()
		return
	}
	if !c.tx.dirty {
		// The arguments alias the connection's read buffer, reused by the next
		// read: the queue keeps a copy.
		c.tx.queued = append(c.tx.queued, queuedCommand{spec: spec, args: copyArgs(args)})
	}
	c.batch.addLocal(func(b []byte) []byte { return resp.AppendSimple(b, "QUEUED") })
}

// checkTransactionSize counts args in the transaction's length and refuses
// them if it would pass MaxRequestLen.
func (c *conn) checkTransactionSize(args [][]byte) error {
	limit := c.srv.cfg.Limits.MaxRequestLen
	if c.tx.bytes += resp.CommandLen(args); c.tx.bytes > limit {
		return fmt.Errorf("ERR the transaction's commands are longer than the %d bytes allowed (--max-request-len)", limit)
	}
	return nil
}

func (c *conn) checkQueueable(spec *commands.Spec, args [][]byte) error {
	if spec.Route != commands.RouteKey {
		if !allowedInTransaction(spec.ID) {
			return errNotInMulti
		}
		return nil
	}
	if err := checkKeys(spec, args, c.srv.cfg.Limits.MaxKeyLen); err != nil {
		return err
	}
	var err error
	if c.batch.parsed, err = spec.Parse(args, c.batch.parsed[:0]); err != nil {
		return err
	}
	if err := c.srv.checkFederated(c.batch.parsed); err != nil {
		return err
	}
	slot := c.tx.slot
	spec.Keys(args, func(k []byte) {
		s := int(cluster.Slot(k))
		if slot < 0 {
			slot = s
		} else if s != slot {
			err = commands.ErrCrossSlot
		}
	})
	if err != nil {
		return err
	}
	c.tx.slot = slot
	return c.checkRoute(spec, args)
}

// copyArgs copies a command's arguments into one new allocation.
func copyArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a):]
	}
	return out
}

// multi is MULTI.
func (c *conn) multi(out []byte) []byte {
	if c.tx.active {
		return appendError(out, errNestedMulti)
	}
	c.tx.reset()
	c.tx.active = true
	if len(c.watching.keys) > 0 {
		c.tx.slot = c.watching.slot // the transaction's keys share the watched keys' slot
	}
	return resp.AppendOK(out)
}

// discard is DISCARD.
func (c *conn) discard(out []byte) []byte {
	if !c.tx.active {
		return appendError(out, errDiscardNoMult)
	}
	c.tx.reset()
	c.unwatch()
	return resp.AppendOK(out)
}

// exec is EXEC: the queued keyed commands go to their one shard in one
// request; PING, ECHO and TIME are answered in their places.
func (c *conn) execTransaction(out []byte) []byte {
	if !c.tx.active {
		return appendError(out, errExecNoMulti)
	}
	tx, w := c.tx, c.watching
	c.tx = transaction{slot: -1, queued: tx.queued[:0]}
	defer c.unwatch()
	if tx.dirty {
		clear(tx.queued)
		return appendError(out, errExecAbort)
	}
	guards := -1
	if len(w.keys) > 0 {
		guards = c.batch.addGuards(c.srv, &w, len(tx.queued))
	} else {
		out = resp.AppendArray(out, len(tx.queued))
	}
	for _, q := range tx.queued {
		if q.spec.Route == commands.RouteKey {
			c.batchKeyed(q.spec, q.args)
		} else {
			c.batch.addLocal(func(b []byte) []byte { return c.serverCommand(q.spec, q.args, b) })
		}
	}
	clear(tx.queued)
	if guards >= 0 {
		c.batch.guardTransaction(guards, len(w.keys))
	}
	return c.flush(out)
}
