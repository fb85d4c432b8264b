package server

import "time"

// CommandClass sorts commands by the path they take, for latency metrics:
// the two have different costs and different things to watch.
type CommandClass uint8

// The command classes.
const (
	// ClassKeyed commands are batched to the shards that own their keys:
	// the decisions (RL.*, CL.THROTTLE) and the key commands (DEL, GET ...).
	// In durable mode their time includes the Raft commit.
	ClassKeyed CommandClass = iota
	// ClassServer commands are the others: answered by the server itself
	// (PING, INFO, CLUSTER ...), spanning every shard (DBSIZE, SCAN) or
	// grouped (EXEC), and commands refused before they ran.
	ClassServer
)

// String names the class as metrics label it.
func (c CommandClass) String() string {
	if c == ClassKeyed {
		return "keyed"
	}
	return "server"
}

// Observer is told how long the server took to answer commands. A
// connection reads its client's pipeline, answers every command in it, and
// writes the replies at once, so each command of a pipeline takes the
// pipeline's time: the server calls Answered once per class per pipeline
// read, with how many commands of that class it held. That keeps the cost
// per command at a fraction of a call, so the observer may take a few
// atomic adds per call. It is called from every connection's goroutine at
// once, and must not keep d or block.
type Observer interface {
	// Answered reports that n commands of class were answered in d: from
	// the moment their bytes were read to the moment their replies were
	// ready to be written.
	Answered(class CommandClass, n int64, d time.Duration)
}

// observe reports one pipeline of commands, keyed of them sent to the
// shards, answered in d.
func observe(obs Observer, commands, keyed int64, d time.Duration) {
	if keyed > 0 {
		obs.Answered(ClassKeyed, keyed, d)
	}
	if rest := commands - keyed; rest > 0 {
		obs.Answered(ClassServer, rest, d)
	}
}
