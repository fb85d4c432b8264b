// Package engine holds rlserver's limiter algorithms and the keyspace of one
// shard.
//
// Everything here is a pure function of (state, command, time): time is an
// argument, arithmetic is exact integer arithmetic, and there are no
// goroutines, no I/O and no map-order dependence. That is what lets every
// replica of a shard apply the same log and reach byte-identical state, and
// what lets tests replay scenarios at explicit instants.
//
// All times are Unix milliseconds. The five-field Decision that every RL.*
// command answers with is defined here, next to the algorithms that fill it.
//
// What each operation is, its command's name, its parameters (their bounds,
// their roles in a limit and how the command writes them: param.go), its
// flags, its reply and the algorithm that decides it, is one row of the
// table in ops.go, which the layers above read rather than copy: commands
// parses limits by it, rls lays out Envoy's limits by it, and the engine
// dispatches through it. An algorithm is a file (sliding.go, bucket.go, ...)
// that implements the algorithm interface (algorithm.go) and that row:
// adding one is a Kind, an Op, the file and the row.
//
// Errors are typed (errors.go): a Code, which the server turns into the
// reply's first word, and a message.
package engine
