package server

import (
	"bytes"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// exec runs or queues one command, appending to out any replies that are due
// before it.
func (c *conn) exec(args [][]byte, out []byte) []byte {
	if c.tracker == nil || !c.tracker.caching {
		return c.execOne(args, out)
	}
	out = c.execOne(args, out)
	if !c.nowait.unanswered { // it runs later (loopwait.go)
		c.afterCommand(args[0])
	}
	return out
}

// execOne is exec without CLIENT CACHING's bookkeeping.
func (c *conn) execOne(args [][]byte, out []byte) []byte {
	if len(c.batch.replies) >= maxSegment {
		if out = c.flush(out); c.nowait.suspended {
			c.nowait.unanswered = true
			return out
		}
	}
	spec := c.lookup(args[0])
	if err := c.refusal(spec, args); err != nil {
		// Inside MULTI a refusal also dooms the EXEC.
		c.batch.addError(err)
		c.tx.markDirty()
		return out
	}
	if c.lastSpec.Load() != spec { // a store is a locked instruction; a load is not
		c.lastSpec.Store(spec)
	}
	if c.tx.active && !endsTransaction(spec.ID) {
		c.queue(spec, args)
		return out
	}
	if spec.Route == commands.RouteKey {
		if err := c.checkRoute(spec, args); err != nil {
			c.batch.addError(err)
			return out
		}
		c.batchKeyed(spec, args)
		c.run.keyed++
		return out
	}
	// Everything else depends on, or changes, the state of the connection or of
	// every shard: answer what is pending first.
	if out = c.flush(out); c.nowait.suspended {
		c.nowait.unanswered = true
		return out
	}
	if c.nowait.loop && !onTheLoop(spec, args) {
		// It may wait for every shard, the cluster or the disk: answer
		// starts a goroutine that answers it (loopwait.go), CLIENT
		// CACHING's bookkeeping included.
		c.nowait.aside, c.nowait.unanswered = true, true
		return out
	}
	return c.serverCommand(spec, args, out)
}

// namedSpec is a command name as a client sent it, and its command.
type namedSpec struct {
	name []byte
	spec *commands.Spec
}

// lookup is commands.Lookup, remembering the name it found last: a
// pipeline repeats one command, and comparing its name's bytes with the
// last one's costs a sixth of lowering and hashing them (BenchmarkLookup;
// docs/performance.md, "Eighth round").
func (c *conn) lookup(name []byte) *commands.Spec {
	if c.named.spec != nil && bytes.Equal(name, c.named.name) {
		return c.named.spec
	}
	spec := commands.Lookup(name)
	if spec != nil {
		c.named = namedSpec{append(c.named.name[:0], name...), spec}
	}
	return spec
}

// refusal is the error that refuses a command before it runs, or nil. It
// checks in Redis's order: a command the table knows (spec is nil when not),
// its arity, authentication, then permissions, right after authentication and
// before the key's slot, never for the commands that authenticate.
func (c *conn) refusal(spec *commands.Spec, args [][]byte) error {
	if spec == nil {
		return commands.UnknownCommand(args)
	}
	if err := spec.CheckArity(args); err != nil {
		return err
	}
	switch {
	case noAuth(spec.ID):
		return nil
	case !c.authed:
		return errNoAuth
	case !c.user.Unrestricted():
		return c.user.Check(spec, args)
	}
	return nil
}

// noAuth reports whether a command may run before authentication, and
// whatever the user's permissions (Redis's no-auth commands).
func noAuth(id commands.ID) bool {
	return id == commands.IDAuth || id == commands.IDHello || id == commands.IDQuit || id == commands.IDResetConn
}

// serverCommand answers a command the server handles itself (RouteServer) or
// that spans every shard (RouteAll). Its arity has been checked.
func (c *conn) serverCommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	switch spec.ID {
	case commands.IDPing:
		if len(args) > 2 {
			return appendError(out, commands.WrongArity("ping"))
		}
		if len(args) == 2 {
			return resp.AppendBulk(out, args[1])
		}
		return resp.AppendSimple(out, "PONG")
	case commands.IDEcho:
		return resp.AppendBulk(out, args[1])
	case commands.IDQuit:
		c.quit = true
		return resp.AppendOK(out)
	case commands.IDResetConn:
		c.resetState()
		return resp.AppendSimple(out, "RESET")
	case commands.IDHello:
		return c.hello(args, out)
	case commands.IDAuth:
		return c.auth(args, out)
	case commands.IDSelect:
		return c.selectDB(args, out)
	case commands.IDClient, commands.IDConfig, commands.IDCluster, commands.IDMemory,
		commands.IDPolicy, commands.IDACL, commands.IDScript:
		return c.answerSubcommand(spec, args, out)
	case commands.IDInfo:
		return c.info(args, out)
	case commands.IDCommand:
		if len(args) == 1 {
			return c.commandAll(out)
		}
		return c.answerSubcommand(spec, args, out)
	case commands.IDTime:
		return c.time(out)
	case commands.IDReadOnly, commands.IDReadWrite:
		// Only cluster clients send these: they follow MOVED.
		c.clusterAware = c.srv.cfg.Cluster != nil
		return resp.AppendOK(out)
	case commands.IDMulti:
		return c.multi(out)
	case commands.IDExec:
		return c.execTransaction(out)
	case commands.IDDiscard:
		return c.discard(out)
	case commands.IDDebug:
		if c.srv.cfg.Debug == nil {
			return appendError(out, errDebugDisabled)
		}
		return c.answerSubcommand(spec, args, out)
	case commands.IDDBSize:
		return c.dbsize(out)
	case commands.IDTop:
		return c.top(args, out)
	case commands.IDBackup:
		return c.backup(args, out)
	case commands.IDFlushAll, commands.IDFlushDB:
		return c.flushAll(args, out)
	case commands.IDScan:
		return c.scan(args, out)
	case commands.IDKeys:
		return c.keys(args, out)
	case commands.IDWatch:
		return c.watch(args, out)
	case commands.IDUnwatch:
		c.unwatch()
		return resp.AppendOK(out)
	}
	return appendError(out, commands.UnknownCommand(args))
}
