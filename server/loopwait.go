package server

import (
	"sync/atomic"

	"github.com/rlserver/rlserver/commands"
)

// A connection on an event loop must never wait: the loop serves many. With
// shards that answer a request after Submit returns (durable, or a cluster's:
// a decision waits for its commit), the loop answers a pipeline in steps
// instead. answer runs the commands and sends their segment to the shards
// (batch.send); when the shards have not answered yet, the connection is
// suspended with the replies so far and the unanswered bytes, and the loop
// goes on with other connections. Each request calls its Wake once
// answered, which asks the loop to resume the connection: it encodes the
// segment's replies and answers the rest of the pipeline the same way,
// then writes every reply with one write. A segment's request timeout is
// kept by a timer that also asks to resume (eventloop_linux.go).
//
// What the loop answers this way is the common case: decisions and the
// other keyed commands, a transaction's EXEC (one segment), and the
// commands that only read or set the connection's own state (onTheLoop).
// Anything else may wait in ways a segment does not (every shard at once,
// the cluster's catalogue, a backup, a full collection), in either mode: the
// loop answers what came before it, then hands that one command to a
// goroutine (startAside), which answers it as a connection's own goroutine
// would, while the connection stays suspended and the loop serves the
// others; once it is answered the loop resumes the connection with the
// rest of the pipeline. A connection so leaves its loop only for what
// would make the loop wait for the connection itself: replies its socket
// does not take at once, and CLIENT TRACKING's pushes.
//
// Submit itself never waits for a commit, but it does wait for room when a
// shard's proposer already queues as many requests as it takes (a thousand
// connections' segments for one shard): that backpressure holds the loop,
// as it held each connection's goroutine, until the proposer takes them,
// which it does all at once for its next entry.

// nowait is a connection's state for answering without waiting.
type nowait struct {
	// loop: the connection is on an event loop (a goroutine never has
	// it), which wake asks to resume it.
	loop bool
	wake func()
	// on: the connection is on an event loop and its shards answer after
	// Submit returns. The loop sets it; a goroutine never has it.
	on bool
	// suspended: a segment was sent and is not all answered; the replies
	// so far are the loop's to keep until it is.
	suspended bool
	// aside: a goroutine answers a command that may wait (startAside);
	// the replies before it are the loop's to keep until it has.
	aside bool
	// unanswered: execOne left its command unanswered, because a segment
	// is in flight (answer leaves it in the rest) or for a goroutine to
	// answer (aside).
	unanswered bool
}

// waits reports whether the connection waits for its shards or for a
// command answered aside: the loop neither reads it nor writes to it
// meanwhile.
func (n *nowait) waits() bool { return n.suspended || n.aside }

// asideCommand is what the goroutine that answers a command aside hands
// back to the loop.
type asideCommand struct {
	out   []byte       // its reply, kept for the next one
	state atomic.Int32 // asideRunning, asideDone or asideAbandoned; 0 between commands
}

// The states of a command aside. Done publishes the reply and every change
// the command made to the connection.
const (
	asideRunning = iota + 1
	asideDone
	asideAbandoned // the loop ended the connection meanwhile: the goroutine releases it
)

// startAside has a goroutine answer the command execOne left aside, args,
// as the connection's own goroutine would (waiting for its shards), and
// wake the loop once it has. Until then the loop leaves the connection
// alone: the goroutine has it, all but suspended and aside, which only the
// loop reads and writes meanwhile (each field its own memory location).
func (c *conn) startAside(args [][]byte) {
	on, wake := c.nowait.on, c.nowait.wake
	c.aside.state.Store(asideRunning)
	go func() {
		// As on a goroutine of its own: not aside again, and its
		// segments wait.
		c.nowait.loop, c.nowait.on = false, false
		out := c.exec(args, c.aside.out[:0])
		c.nowait.loop, c.nowait.on = true, on
		c.aside.out = out
		if !c.aside.state.CompareAndSwap(asideRunning, asideDone) {
			c.release() // the loop closed it meanwhile (abandonAside)
			return
		}
		wake()
	}()
}

// abandonAside tells a command aside still running that the loop has closed
// the connection (the server is closing), and reports whether there was
// one: its goroutine then releases the connection once done, as it still
// uses it until then.
func (c *conn) abandonAside() bool {
	return c.aside.state.CompareAndSwap(asideRunning, asideAbandoned)
}

// takeAside appends the reply of the command answered aside to out, once
// it is ready, and reports whether it was.
func (c *conn) takeAside(out []byte) ([]byte, bool) {
	if c.aside.state.Load() != asideDone {
		return out, false
	}
	c.aside.state.Store(0)
	c.nowait.aside = false
	out = append(out, c.aside.out...)
	if cap(c.aside.out) > 1<<20 {
		c.aside.out = nil // a large SCAN page, say: an idle connection does not pin it
	}
	return out, true
}

// onTheLoop reports whether a command the server answers itself (not a
// keyed one) is answered on the loop: it reads or sets only the
// connection's own state, or reads this node's figures (INFO's come from
// counters and the shards' replicas, each read under a lock held for an
// apply's microseconds), or it waits only for a segment (EXEC, which
// sends its transaction as one; MULTI and DISCARD, which set the
// connection's state: rate-limiter-flexible sends all three with many of
// its calls). A subcommand's entry says whether it is (subcommands.go):
// CLIENT's and COMMAND's are, and CLUSTER's reads (SLOTS, SHARDS, NODES,
// INFO, MYID, which cluster clients ask on the connections they then send
// decisions on), not the subcommands that change the cluster, which wait
// for its catalogue. An unknown subcommand is an error, answered at once.
func onTheLoop(spec *commands.Spec, args [][]byte) bool {
	if len(spec.Sub) > 0 {
		sub := spec.Subcommand(args)
		return sub == nil || subcommandOf(sub).onLoop
	}
	switch spec.ID {
	case commands.IDPing, commands.IDEcho, commands.IDQuit, commands.IDResetConn,
		commands.IDHello, commands.IDAuth, commands.IDSelect, commands.IDTime,
		commands.IDReadOnly, commands.IDReadWrite, commands.IDInfo, commands.IDMulti,
		commands.IDExec, commands.IDDiscard, commands.IDUnwatch:
		return true
	}
	return false
}
