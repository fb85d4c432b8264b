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
package engine
