package server

import (
	"errors"
	"math"
	"net"
)

// A connection keeps the bytes of an incomplete command until it is whole,
// whatever bulk length or argument count it announces, and redcon's parser
// splits an inline command at a cost that grows with the square of its
// length, so one connection could make the server allocate gigabytes.
// guardConn stands between the socket and the connection's read loop:
// it follows the RESP framing of the bytes as they arrive (headers only; bulk
// payloads are skipped, not inspected) and cuts the connection, with Redis's
// error text, before a command can exceed the limits. Commands complete
// before the offending one are still executed and answered.

// Limits bounds what one command may make the server hold (Config.Validate
// says how small each may be).
type Limits struct {
	MaxBulkLen    int64 // bytes in one argument
	MaxArgs       int64 // arguments in one command, its name included
	MaxRequestLen int64 // bytes in one command, framing included (inline: what splitting it costs)
	MaxKeyLen     int   // bytes in one key (checked per command, not here)
}

// Redis's texts for these protocol errors; the connection closes after them.
var (
	errBulkTooLong    = errors.New("ERR Protocol error: invalid bulk length")
	errTooManyArgs    = errors.New("ERR Protocol error: invalid multibulk length")
	errInlineTooLong  = errors.New("ERR Protocol error: too big inline request")
	errRequestTooLong = errors.New("ERR Protocol error: request too large")
)

// maxInline is Redis's PROTO_INLINE_MAX_SIZE, the longest inline command.
const maxInline = 64 * 1024

type frameState uint8

const (
	atCommand  frameState = iota // the next byte starts a command
	inCount                      // reading "*<count>\r\n"
	atBulk                       // the next byte should be '$'
	inBulkLen                    // reading "$<len>\r\n"
	inBulkBody                   // skipping a payload and its CRLF
	inInline                     // reading an inline command up to LF
)

// guardConn enforces Limits on the bytes read from a client.
type guardConn struct {
	net.Conn
	limits Limits

	state    frameState
	num      int64 // the number being read in a header
	line     int   // bytes in the current header or inline line
	cr       bool  // the header's CR has been read: only LF may follow
	neg      bool  // the "*<count>" header is negative: an empty command
	spaces   int64 // spaces in the current inline line
	splits   int64 // spaces and quotes in it: where redcon splits the line
	splitSum int64 // the sum of their offsets in the line
	args     int64 // bulk arguments still expected in this command
	skip     int64 // payload bytes (and CRLF) still to skip
	cmdBytes int64 // bytes of the current command so far
	failed   error // a limit was exceeded: report it at the next Read
}

// Read reads from the client and checks the limits. When bytes cross one, the
// bytes before the offending command are returned first, so the commands they
// complete still run; the next Read writes the error and fails.
func (g *guardConn) Read(p []byte) (int, error) {
	if g.failed != nil {
		return 0, g.fail()
	}
	n, err := g.Conn.Read(p)
	if n > 0 {
		if ok, cut := g.scan(p[:n]); !ok {
			if cut == 0 {
				return 0, g.fail()
			}
			return cut, nil
		}
	}
	return n, err
}

// fail writes the pending error to the client and returns it.
func (g *guardConn) fail() error {
	g.Conn.Write(appendError(nil, g.failed))
	return g.failed
}

// scan advances the framing over b. When a limit is crossed it records the
// error and returns the number of bytes before the command that crossed it.
func (g *guardConn) scan(b []byte) (ok bool, cut int) {
	start := 0 // where the current command began within b
	for i := 0; i < len(b); i++ {
		c := b[i]
		if g.state == atCommand {
			start, g.cmdBytes = i, 0
			if n := g.wholeCommand(b[i:]); n > 0 {
				i += n - 1
				continue
			}
		}
		if n := g.wholeHeader(b[i:]); n > 0 {
			// The common case, a header read whole: no byte-at-a-time walk.
			g.cmdBytes += int64(n)
			i += n - 1
		} else if g.state == inBulkBody {
			step := min(g.skip, int64(len(b)-i))
			g.skip -= step
			g.cmdBytes += step
			i += int(step) - 1
			if g.skip == 0 {
				g.nextArg()
			}
		} else {
			g.cmdBytes++
			g.step(c)
		}
		if g.failed == nil && g.cmdBytes > g.limits.MaxRequestLen {
			g.failed = errRequestTooLong
		}
		if g.failed != nil {
			return false, start
		}
	}
	return true, 0
}

// wholeCommand takes, when b begins with a whole multibulk command within
// every limit ("*<n>\r\n", then n times "$<len>\r\n", the payload and two
// bytes: what every client library sends), that command at once and returns
// its length. It returns 0, having changed nothing, for anything else: an
// inline or empty command, one cut by the end of the read, or one that
// breaks a rule, which scan then walks header by header to the same end or
// error as before. Most reads hold whole commands, and taking each in one
// step is the cheaper walk (BenchmarkGuardScan; docs/performance.md,
// "Thirteenth round").
// A command cut by the read is tried once, at its start: the walk carries
// it over the reads that follow.
func (g *guardConn) wholeCommand(b []byte) int {
	if len(b) < 4 || b[0] != '*' {
		return 0
	}
	n, i := headerNumber(b, 1, limitOf(inCount, g.limits))
	if i == 0 || n <= 0 {
		return 0
	}
	bulkLimit := limitOf(inBulkLen, g.limits)
	for ; n > 0; n-- {
		if i >= len(b) || b[i] != '$' {
			return 0
		}
		size, body := headerNumber(b, i+1, bulkLimit)
		if body == 0 || size > int64(len(b)-body-2) {
			return 0
		}
		i = body + int(size) + 2 // the payload's CRLF is redcon's to check, as in a walk
	}
	if int64(i) > g.limits.MaxRequestLen {
		return 0
	}
	return i
}

// wholeHeader takes, when b begins with a whole, well-formed header of the
// kind the framing expects ("*<n>\r\n" at a command's start, "$<n>\r\n"
// before an argument) within its limit, that header at once and returns its
// length. It returns 0, having changed nothing, for anything else: a header
// cut by the end of the read, a malformed or oversized one, which step then
// walks byte by byte to the same end or error as before.
func (g *guardConn) wholeHeader(b []byte) int {
	var state frameState
	switch {
	case len(b) < 4:
		return 0
	case g.state == atCommand && b[0] == '*':
		state = inCount
	case g.state == atBulk && b[0] == '$':
		state = inBulkLen
	default:
		return 0
	}
	num, end := headerNumber(b, 1, limitOf(state, g.limits))
	if end == 0 {
		return 0
	}
	g.state, g.num = state, num
	g.endHeader()
	return end
}

// headerNumber reads a header's number, whose digits begin at b[i], and the
// CRLF after it: "0" or digits without a leading zero, at most limit. It
// returns the number and the offset just past the CRLF, or an offset of 0
// when the header is not whole, well-formed and within limit. (Where a
// header goes wrong does not matter here: step walks it again to find out.
// So the number is compared once, at its end, and one of more than 18
// digits, which could overflow, is left to step.)
func headerNumber(b []byte, i int, limit int64) (int64, int) {
	first := i
	var num int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		num = num*10 + int64(b[i]-'0')
	}
	switch digits := i - first; {
	case digits == 0 || digits > 18 || digits > 1 && b[first] == '0' || num > limit:
		return 0, 0
	case i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n':
		return 0, 0
	}
	return num, i + 2
}

// step advances the framing by one byte outside a payload. Framing the guard
// cannot follow is refused outright, never waved through: redcon parses
// numbers more loosely than Redis ("+5", "0005"), and a header the guard
// misread would escape the limits.
func (g *guardConn) step(c byte) {
	switch g.state {
	case atCommand:
		if c == '*' {
			g.startHeader(inCount)
		} else if c != '\n' {
			g.state, g.line, g.spaces, g.splits, g.splitSum = inInline, 0, 0, 0, 0
			g.inline(c)
		}
	case inCount, inBulkLen:
		g.header(c)
	case atBulk:
		if c != '$' {
			// The byte as sent, as Redis quotes it (not a rune's UTF-8).
			g.failed = errors.New("ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'")
		}
		g.startHeader(inBulkLen)
	case inInline:
		g.inline(c)
	}
}

// inline advances an inline command by one byte. Besides Redis's bound on
// the line, the command must respect the limits a multibulk one does, which
// the line bounds from above: it may not be longer than MaxBulkLen, nor have
// more than MaxArgs-1 spaces. And redcon, splitting the line, allocates for
// each part a buffer as long as the rest of the line, so that 64KiB of
// "a a a ..." would cost it a gigabyte: at the LF, that cost (counted at
// every space and quote, quoted or not, to stay on the safe side) may not
// pass MaxRequestLen. Every refusal is Redis's "too big inline request".
func (g *guardConn) inline(c byte) {
	if c == '\n' {
		if g.splitCost() > g.limits.MaxRequestLen {
			g.failed = errInlineTooLong
			return
		}
		g.state = atCommand
		return
	}
	switch c {
	case ' ':
		g.spaces++
		fallthrough
	case '"', '\'':
		g.splits++
		g.splitSum += int64(g.line)
	}
	g.line++
	if g.line > maxInline || int64(g.line) > g.limits.MaxBulkLen || g.spaces >= g.limits.MaxArgs {
		g.failed = errInlineTooLong
	}
}

// splitCost is what redcon allocates to split the inline line read so far,
// give or take the allocator's rounding: a buffer as long as the line, then
// after each split at offset p one as long as the rest of the line, line-p-1.
func (g *guardConn) splitCost() int64 {
	n := int64(g.line)
	return n + g.splits*(n-1) - g.splitSum
}

// startHeader begins a "*<n>" or "$<n>" line, its first byte read.
func (g *guardConn) startHeader(state frameState) {
	g.state, g.num, g.line, g.cr, g.neg = state, 0, 0, false, false
}

// header advances a "*<n>" or "$<n>" line by one byte. The number is "0" or
// digits without a leading zero, at most the header's limit, and the line
// ends with CR LF right after it: anything else fails at once. A count may
// be negative, as Redis reads it: "*-1" is an empty command, skipped.
func (g *guardConn) header(c byte) {
	g.line++ // bytes after the '*' or '$'
	switch {
	case g.cr:
		if c != '\n' {
			g.failed = g.headerError()
			return
		}
		g.endHeader()
	case c == '-' && g.state == inCount && g.line == 1:
		g.neg = true
	case c >= '0' && c <= '9' && g.digitAllowed(c):
		// num*10+d > limit, tested so that it cannot overflow: the number is
		// refused as soon as it passes the limit, whatever its length.
		d, limit := int64(c-'0'), g.headerLimit()
		if g.neg {
			limit = math.MaxInt64 // any negative count is an empty command
		}
		if d > limit || g.num > (limit-d)/10 {
			g.failed = g.headerError()
			return
		}
		g.num = g.num*10 + d
	case c == '\r' && g.line > 1 && !(g.neg && g.line == 2):
		g.cr = true
	default:
		g.failed = g.headerError()
	}
}

// digitAllowed reports whether digit c may come next in a header's number:
// no leading zero, and after a minus sign not even one ("-0" is no number
// to Redis either).
func (g *guardConn) digitAllowed(c byte) bool {
	if g.neg {
		return g.line > 2 || c != '0'
	}
	return !(g.line == 2 && g.num == 0)
}

// maxBulkLimit caps MaxBulkLen, however large it is configured: redcon adds
// a payload's length to its offset in the read buffer, and a sum that wraps
// past math.MaxInt64 makes it index out of range and panic.
const maxBulkLimit = 1 << 62

// maxArgsLimit caps MaxArgs, however large it is configured: redcon walks
// all of a command's announced arguments on every read until the command is
// complete, so a client announcing 10^18 of them would keep a goroutine
// busy for ever. It is Redis 6's own bound.
const maxArgsLimit = 1024 * 1024

// headerLimit is the largest number the current header may carry.
func (g *guardConn) headerLimit() int64 { return limitOf(g.state, g.limits) }

// limitOf is the largest number a header read in state (inCount or
// inBulkLen) may carry.
func limitOf(state frameState, limits Limits) int64 {
	if state == inCount {
		return min(limits.MaxArgs, maxArgsLimit)
	}
	return min(limits.MaxBulkLen, maxBulkLimit)
}

// headerError is Redis's error for a malformed or oversized header.
func (g *guardConn) headerError() error {
	if g.state == inCount {
		return errTooManyArgs
	}
	return errBulkTooLong
}

// endHeader acts on a complete "*<n>" or "$<n>" line.
func (g *guardConn) endHeader() {
	if g.state == inCount {
		// neg is consumed here: wholeHeader does not reset it, and a
		// negative count walked byte by byte must not make the next
		// header, taken whole, look empty too.
		neg := g.neg
		g.args, g.neg = g.num, false
		if g.args <= 0 || neg {
			g.state = atCommand
		} else {
			g.state = atBulk
		}
		return
	}
	g.state, g.skip = inBulkBody, g.num+2
}

// nextArg moves on after a payload.
func (g *guardConn) nextArg() {
	g.args--
	if g.args > 0 {
		g.state = atBulk
	} else {
		g.state = atCommand
	}
}
