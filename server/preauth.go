package server

import (
	"errors"
	"math"
)

// Before a connection authenticates, Redis bounds what it may announce
// (processMultibulkBuffer, when authRequired): more than 10 arguments, or
// an argument longer than 16 KiB, closes the connection. So does rlserver,
// whose general limits (Limits) would otherwise let anyone who can connect
// make it hold megabytes per connection before the first AUTH. The check is
// made on each command's headers as it is parsed, in turn with the
// commands before it, so that an AUTH pipelined before a large command
// lifts it, as in Redis; the guard's limits still apply first, as bytes
// arrive.

// Redis's bounds before authentication.
const (
	maxUnauthArgs = 10
	maxUnauthBulk = 16 * 1024
)

// Redis's texts for them; the connection closes after them.
var (
	errUnauthArgs = errors.New("ERR Protocol error: unauthenticated multibulk length")
	errUnauthBulk = errors.New("ERR Protocol error: unauthenticated bulk length")
)

// checkUnauthenticated checks the command at the start of in, as much of
// its headers as has arrived, against the bounds before authentication.
// Framing it cannot read is left to the parser, which refuses it.
func checkUnauthenticated(in []byte) error {
	if len(in) == 0 || in[0] != '*' {
		return nil // an inline command: bounded by its 64 KiB, as in Redis
	}
	n, i, ok := readHeaderLine(in, 1)
	if !ok {
		return nil
	}
	if n > maxUnauthArgs {
		return errUnauthArgs
	}
	for ; n > 0; n-- {
		if i >= len(in) || in[i] != '$' {
			return nil
		}
		size, body, ok := readHeaderLine(in, i+1)
		if !ok {
			return nil
		}
		if size > maxUnauthBulk {
			return errUnauthBulk
		}
		if size < 0 || int64(len(in)-body) < size+2 {
			return nil
		}
		i = body + int(size) + 2
	}
	return nil
}

// readHeaderLine reads the number of a header whose digits begin at b[i]
// (an optional minus sign, then digits), and returns it with the offset
// just past its CRLF; ok is false while the line is not whole, or when it
// is no number an int64 holds.
func readHeaderLine(b []byte, i int) (n int64, end int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	first := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := int64(b[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, 0, false
		}
		n = n*10 + d
	}
	if i == first || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	return n, i + 2, true
}

// skipNegativeCount returns in past a "*<negative count>\r\n" at its start,
// which Redis reads as an empty command (redcon refuses it), and whether
// there was one.
func skipNegativeCount(in []byte) ([]byte, bool) {
	if len(in) < 2 || in[0] != '*' || in[1] != '-' {
		return in, false
	}
	n, end, ok := readHeaderLine(in, 1)
	if !ok || n >= 0 || in[2] == '0' {
		return in, false // "-0", or not whole yet: the parser's, or later
	}
	return in[end:], true
}
