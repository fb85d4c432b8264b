package server

import "github.com/rlserver/rlserver/commands"

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
// What the loop can answer this way is the common case: decisions and the
// other keyed commands, and the commands that only read or set the
// connection's own state (answersAtOnce). Anything else may wait in ways the
// loop cannot suspend (a transaction, every shard at once, the cluster's
// catalogue, a backup): the pipeline stops before it, and once what came
// before is answered and written, the connection is handed to a goroutine
// of its own, which answers it and serves the connection from then on.
//
// Submit itself never waits for a commit, but it does wait for room when a
// shard's proposer already queues as many requests as it takes (a thousand
// connections' segments for one shard): that backpressure holds the loop,
// as it held each connection's goroutine, until the proposer takes them,
// which it does all at once for its next entry.

// nowait is a connection's state for answering without waiting.
type nowait struct {
	// on: the connection is on an event loop and its shards answer after
	// Submit returns. The loop sets it; a goroutine never has it.
	on bool
	// suspended: a segment was sent and is not all answered; the replies
	// so far are the loop's to keep until it is.
	suspended bool
	// needsGoroutine: the pipeline reached a command that may wait.
	needsGoroutine bool
	// unanswered: execOne left its command unanswered (for either reason
	// above), so answer leaves it in the rest.
	unanswered bool
}

// answersAtOnce reports whether a command the server answers itself (not a
// keyed one) never waits: it reads or sets only the connection's own state,
// or reads this node's figures (INFO's come from counters and the shards'
// replicas, each read under a lock held for an apply's microseconds) or its
// view of the cluster (CLUSTER SLOTS, SHARDS, NODES, INFO, MYID, which
// cluster clients ask on the connections they then send decisions on; not
// the subcommands that change the cluster, which wait for its catalogue).
func answersAtOnce(spec *commands.Spec, args [][]byte) bool {
	switch spec.ID {
	case commands.IDPing, commands.IDEcho, commands.IDQuit, commands.IDResetConn,
		commands.IDHello, commands.IDAuth, commands.IDSelect, commands.IDClient,
		commands.IDCommand, commands.IDTime, commands.IDReadOnly, commands.IDReadWrite,
		commands.IDInfo:
		return true
	case commands.IDCluster:
		sub := spec.Subcommand(args)
		return sub == nil || !changesTheCluster(sub.Name) // an unknown one is an error, at once
	}
	return false
}
