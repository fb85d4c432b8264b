// Package resp is rlserver's one codec of the Redis serialization protocol,
// RESP2 and RESP3: every reply rlserver writes and every reply it reads goes
// through it.
//
//   - The Append functions (append.go) write one reply, or the head of an
//     aggregate, into a byte slice, allocating nothing: a connection's replies
//     for a whole pipeline are appended to one buffer and written at once.
//   - Value (value.go) is a reply held as data rather than bytes, the same
//     for either protocol. A reply of several values is a flat slice in
//     pre-order: an aggregate (array, map, set, push) carries its element
//     count and is followed by its elements, so one reply is one slice, not
//     a tree of allocations. The engine and the script runner produce
//     Values; AppendValues writes them for a RESP2 or a RESP3 connection.
//   - Parse (parse.go) reads a value from text, such as a reply a peer
//     forwarded; Reader (reader.go) reads replies from a connection, for
//     rlserver's own clients. AppendCommand (command.go) writes a client's
//     command.
//
// The server reads its clients' commands with redcon, which parses them in
// place; this package does not.
//
// RESP2 has fewer types than RESP3: written for a RESP2 connection, a map is
// an array of its keys and values, a set an array, a null a nil bulk string,
// a boolean the integer 1 or 0, and a double or a big number a bulk string
// of its text, as Redis writes them.
package resp
