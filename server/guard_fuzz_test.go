package server

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tidwall/redcon"
)

// fuzzLimits are the limits FuzzGuard runs under, picked by one input byte:
// small ones the fuzzer crosses easily, zero-length bulks, and limits at the
// top of int64 where arithmetic could overflow.
var fuzzLimits = []Limits{
	{MaxBulkLen: 8, MaxArgs: 4, MaxRequestLen: 64},
	{MaxBulkLen: 0, MaxArgs: 1, MaxRequestLen: 16},
	{MaxBulkLen: 100, MaxArgs: 12, MaxRequestLen: 1 << 20},
	{MaxBulkLen: 3, MaxArgs: 100, MaxRequestLen: 40},
	{MaxBulkLen: math.MaxInt64, MaxArgs: math.MaxInt64, MaxRequestLen: math.MaxInt64},
	{MaxBulkLen: math.MaxInt64 / 10, MaxArgs: math.MaxInt64/10 + 7, MaxRequestLen: math.MaxInt64 - 1},
}

// FuzzGuard feeds bytes through guardConn.scan in random chunks and checks
// it against refFrames, an independent reading of the rules: the guard never
// panics, fails exactly when and how the reference does, hands on no byte of
// an offending command's violation, and nothing redcon parses from what it
// hands on exceeds a limit.
func FuzzGuard(f *testing.F) {
	seeds := []string{
		encode("RL.SLIDING", "k", "10", "1000"),
		encode("ECHO", "0123456789") + "PING\r\n",
		"PING\r\n\n\r\nECHO x\r\n",
		"*2\r\n$4\r\nECHO\r\n$+5\r\nhello\r\n",
		"*03\r\n$4\r\nPING\r\n",
		"*1\r\n$0005\r\nhello\r\n",
		"*1\r\n$1000000000000000000000005\r\n",
		"*99999999999999999999\r\n",
		"*1\r\n$9223372036854775807\r\n",
		"*1\r\n$9223372036854775805\r\nabc",
		"*1\r5\r\n*1\r\r\n*1\n",
		"*0\r\n*-1\r\n$-1\r\n",
		"*-10\r\n*-0\r\n", "*-9223372036854775807\r\n*-9223372036854775808\r\n", "*-\r\n",
		"*1\r\n:1\r\n",
		"*1\r\n\xff",
	}
	for i, s := range seeds {
		for pick := range fuzzLimits {
			f.Add([]byte(s), uint64(i), uint8(pick))
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte, chunkSeed uint64, pick uint8) {
		limits := fuzzLimits[int(pick)%len(fuzzLimits)]
		passed, failed := scanInChunks(stream, limits, chunkSeed)
		ref := refFrames(stream, limits)

		if !sameError(failed, ref.err) {
			t.Fatalf("guard error %v, reference %v", failed, ref.err)
		}
		if ref.err == nil {
			if len(passed) != len(stream) {
				t.Fatalf("no violation, yet only %d of %d bytes passed", len(passed), len(stream))
			}
		} else if len(passed) < ref.errStart || len(passed) > ref.errAt {
			// Bytes of the offending command may pass (they were handed on
			// before it crossed a limit) but never the byte that crossed it.
			t.Fatalf("%d bytes passed; the offending command starts at %d and crosses a limit at %d",
				len(passed), ref.errStart, ref.errAt)
		}
		checkParsedWithinLimits(t, passed, limits)
	})
}

// scanInChunks runs stream through a guard in chunks of random sizes and
// returns the bytes it let through and the error it failed with.
func scanInChunks(stream []byte, limits Limits, seed uint64) (passed []byte, failed error) {
	g := &guardConn{limits: limits}
	rng := rand.New(rand.NewPCG(seed, seed>>32))
	for len(stream) > 0 {
		n := 1 + rng.IntN(len(stream))
		ok, cut := g.scan(stream[:n])
		if !ok {
			return append(passed, stream[:cut]...), g.failed
		}
		passed = append(passed, stream[:n]...)
		stream = stream[n:]
	}
	return passed, nil
}

// sameError reports whether two errors are the same protocol error.
func sameError(got, want error) bool {
	if got == nil || want == nil {
		return got == want
	}
	return errors.Is(got, want) || got.Error() == want.Error() // "expected '$'" quotes a byte
}

// checkParsedWithinLimits parses what the guard let through with redcon's
// own reader, as the server does, and checks every command it yields.
func checkParsedWithinLimits(t *testing.T, passed []byte, limits Limits) {
	rd := redcon.NewReader(bytes.NewReader(passed))
	for {
		cmds, err := rd.ReadCommands()
		if err != nil {
			return // the end of the bytes, or redcon's own refusal
		}
		for _, cmd := range cmds {
			if int64(len(cmd.Args)) > limits.MaxArgs {
				t.Fatalf("a command of %d arguments passed", len(cmd.Args))
			}
			for _, a := range cmd.Args {
				if int64(len(a)) > limits.MaxBulkLen {
					t.Fatalf("an argument of %d bytes passed", len(a))
				}
			}
		}
	}
}

// refResult is what the reference finds in a stream.
type refResult struct {
	err      error // the first violation, nil if none
	errStart int   // where the offending command starts
	errAt    int   // the offset of the byte that commits the violation
}

// refFrames reads stream command by command, as a strict RESP reader would,
// and reports the first violation of limits. A command is "*<n>\r\n" then n
// times "$<len>\r\n<len bytes><2 bytes>", where numbers are "0" or have no
// leading zero; an inline command is any other bytes up to LF, of at most
// maxInline bytes before the LF; a lone LF is an empty command, and so is a
// negative count ("*-<digits>\r\n", no leading zero, within int64). No command
// may exceed MaxRequestLen bytes. When a malformed or oversized header and
// the request size are crossed at the same byte, the header wins.
func refFrames(stream []byte, limits Limits) refResult {
	for pos := 0; pos < len(stream); {
		end, err, at := refCommand(stream, pos, limits)
		if sizeAt := pos + int(min(limits.MaxRequestLen, int64(len(stream)))); sizeAt < len(stream) &&
			(err == nil || at > sizeAt) && (end < 0 || end > sizeAt) {
			return refResult{err: errRequestTooLong, errStart: pos, errAt: sizeAt}
		}
		if err != nil {
			return refResult{err: err, errStart: pos, errAt: at}
		}
		if end < 0 {
			break // incomplete
		}
		pos = end
	}
	return refResult{}
}

// refCommand reads one command at pos: its end (-1 if incomplete), or the
// framing violation and the offset of the byte that commits it.
func refCommand(b []byte, pos int, limits Limits) (end int, err error, at int) {
	switch b[pos] {
	case '\n':
		return pos + 1, nil, 0
	case '*':
		if pos+1 < len(b) && b[pos+1] == '-' { // a negative count: an empty command
			if pos+2 < len(b) && b[pos+2] == '0' {
				return -1, errTooManyArgs, pos + 2
			}
			_, next, err, at := refNumber(b, pos+2, math.MaxInt64, errTooManyArgs)
			return next, err, at
		}
		n, next, err, at := refNumber(b, pos+1, uint64(min(limits.MaxArgs, maxArgsLimit)), errTooManyArgs)
		if err != nil || next < 0 {
			return -1, err, at
		}
		for ; n > 0; n-- {
			if next >= len(b) {
				return -1, nil, 0
			}
			if b[next] != '$' {
				return -1, errors.New("ERR Protocol error: expected '$', got '" + string(b[next:next+1]) + "'"), next
			}
			var size uint64
			size, next, err, at = refNumber(b, next+1, uint64(min(limits.MaxBulkLen, maxBulkLimit)), errBulkTooLong)
			if err != nil || next < 0 {
				return -1, err, at
			}
			if size+2 > uint64(len(b)-next) {
				return -1, nil, 0
			}
			next += int(size) + 2
		}
		return next, nil, 0
	}
	return refInline(b, pos, limits)
}

// refInline reads an inline command at pos: a line of at most
// min(maxInline, MaxBulkLen) bytes before its LF, with fewer than MaxArgs
// spaces, whose split cost is at most MaxRequestLen. The split cost is what
// redcon allocates when it splits the line: the line's length L, plus L-p-1
// for a split at each space or quote at offset p; it is checked at the LF.
func refInline(b []byte, pos int, limits Limits) (end int, err error, at int) {
	line := b[pos:]
	lf := bytes.IndexByte(line, '\n')
	if lf >= 0 {
		line = line[:lf]
	}
	at = math.MaxInt
	if maxLen := int(min(maxInline, limits.MaxBulkLen)); len(line) > maxLen {
		at = pos + maxLen // the first byte past the bound
	}
	spaces, cost := int64(0), int64(len(line))
	for i, c := range line {
		if c == ' ' {
			if spaces++; spaces == limits.MaxArgs {
				at = min(at, pos+i)
			}
		}
		if c == ' ' || c == '"' || c == '\'' {
			cost += int64(len(line) - i - 1)
		}
	}
	switch {
	case at < math.MaxInt:
		return -1, errInlineTooLong, at
	case lf < 0:
		return -1, nil, 0
	case cost > limits.MaxRequestLen:
		return -1, errInlineTooLong, pos + lf
	}
	return pos + lf + 1, nil, 0
}

// refNumber reads "<digits>\r\n" at pos, at most limit: the number, the
// offset after the LF (-1 if incomplete), or the violation and its offset.
// Numbers are read with saturation so that no length of digits wraps.
func refNumber(b []byte, pos int, limit uint64, bad error) (n uint64, next int, err error, at int) {
	i := pos
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i > pos && b[pos] == '0' {
			return 0, -1, bad, i // a leading zero
		}
		if n > (math.MaxUint64-9)/10 {
			n = math.MaxUint64
		} else {
			n = n*10 + uint64(b[i]-'0')
		}
		if n > limit {
			return 0, -1, bad, i
		}
	}
	switch {
	case i == len(b):
		return 0, -1, nil, 0
	case i == pos || b[i] != '\r':
		return 0, -1, bad, i // no digits, or a byte that is neither digit nor CR
	case i+1 == len(b):
		return 0, -1, nil, 0
	case b[i+1] != '\n':
		return 0, -1, bad, i + 1
	}
	return n, i + 2, nil, 0
}
