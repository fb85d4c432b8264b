package server

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// Wire texts of the protocol errors the guard answers before closing.
const (
	wireBulkTooLong    = "-ERR Protocol error: invalid bulk length\r\n"
	wireTooManyArgs    = "-ERR Protocol error: invalid multibulk length\r\n"
	wireInlineTooLong  = "-ERR Protocol error: too big inline request\r\n"
	wireRequestTooLong = "-ERR Protocol error: request too large\r\n"
)

// TestGuardRefusesOversizedCommands sends, in one write, two good commands
// and then one that crosses a limit: the good ones are answered, then the
// error, then the connection closes.
func TestGuardRefusesOversizedCommands(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.Limits.MaxRequestLen = 100 << 10 }))
	good := "PING\r\n" + encode("ECHO", "hi")
	goodReplies := "+PONG\r\n" + bulkReply("hi")
	tests := []struct {
		name string
		bad  string
		want string
	}{
		{"bulk above MaxBulkLen", "*2\r\n$4\r\nECHO\r\n$4097\r\n", wireBulkTooLong},
		{"bulk header alone", "*2\r\n$4\r\nECHO\r\n$99999999", wireBulkTooLong},
		{"args above MaxArgs", "*65\r\n", wireTooManyArgs},
		{"args header alone", "*1000000", wireTooManyArgs},
		{"inline above 64KiB", "PING " + strings.Repeat("x", 64<<10), wireInlineTooLong},
		{"command above MaxRequestLen", "*40\r\n" + strings.Repeat("$4000\r\n"+strings.Repeat("a", 4000)+"\r\n", 40), wireRequestTooLong},
		{"plus sign in bulk length", "*2\r\n$4\r\nECHO\r\n$+5\r\nhello\r\n", wireBulkTooLong},
		{"leading zero in count", "*03\r\n$4\r\nECHO\r\n$1\r\na\r\n", wireTooManyArgs},
		{"leading zeros in bulk length", "*2\r\n$4\r\nECHO\r\n$0005\r\nhello\r\n", wireBulkTooLong},
		{"25-digit bulk length", "*2\r\n$4\r\nECHO\r\n$1000000000000000000000005\r\nhello\r\n", wireBulkTooLong},
		{"25-digit count", "*1000000000000000000000001\r\n$4\r\nPING\r\n", wireTooManyArgs},
		{"negative zero count", "*-0\r\n", wireTooManyArgs},
		{"minus without a count", "*-\r\n", wireTooManyArgs},
		{"negative bulk length", "*1\r\n$-1\r\n", wireBulkTooLong},
		{"empty count", "*\r\n", wireTooManyArgs},
		{"count ended by LF alone", "*1\n$4\r\nPING\r\n", wireTooManyArgs},
		{"bulk length ended by LF alone", "*1\r\n$4\nPING\r\n", wireBulkTooLong},
		{"digits after CR", "*1\r5\r\n", wireTooManyArgs},
		{"two CRs", "*1\r\r\n$4\r\nPING\r\n", wireTooManyArgs},
		{"not a bulk", "*1\r\n:4\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			c.write(good + tt.bad)
			got := c.read() + c.read() + c.read()
			if got != goodReplies+tt.want {
				t.Fatalf("got %q\nwant %q", got, goodReplies+tt.want)
			}
			c.expectClosed()
		})
	}
}

// TestGuardErrorQuotesTheByteAsSent checks that "expected '$'" quotes the
// byte the client sent, not its UTF-8 encoding as a rune.
func TestGuardErrorQuotesTheByteAsSent(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.write("*1\r\n\xff")
	if got, want := c.read(), "-ERR Protocol error: expected '$', got '\xff'\r\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	c.expectClosed()
}

// TestGuardAcceptsCommandsAtTheLimits checks that every limit is inclusive.
func TestGuardAcceptsCommandsAtTheLimits(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.Limits.MaxBulkLen = maxInline }))
	c := s.dial(t)
	big := strings.Repeat("b", maxInline)
	c.expect(bulkReply(big), "ECHO", big)
	args := make([]string, testLimits.MaxArgs)
	args[0] = "DEL"
	for i := 1; i < len(args); i++ {
		args[i] = "k"
	}
	c.expect(":0\r\n", args...)
	// maxInline bytes before the LF, its CR included.
	c.write("PING a " + strings.Repeat("x", maxInline-len("PING a \r")) + "\r\n")
	if got, want := c.read(), "-ERR wrong number of arguments for 'ping' command\r\n"; got != want {
		t.Fatalf("inline of %d bytes: %.80q, want %q", maxInline, got, want)
	}
	c.write("DEL" + strings.Repeat(" k", int(testLimits.MaxArgs-1)) + "\r\n")
	if got := c.read(); got != ":0\r\n" {
		t.Fatalf("inline DEL of %d arguments: %q", testLimits.MaxArgs, got)
	}
	// An empty multibulk is skipped without a reply, as Redis does.
	c.write("*0\r\n" + encode("PING"))
	if got := c.read(); got != "+PONG\r\n" {
		t.Fatalf("*0 then PING: %q", got)
	}
}

// TestGuardBoundsInlineCommands checks the limits an inline command must
// respect: the line bounds its arguments' length and count, and the memory
// redcon needs to split it.
func TestGuardBoundsInlineCommands(t *testing.T) {
	limits := Limits{MaxBulkLen: 10_000, MaxArgs: 4096, MaxRequestLen: 256 << 10, MaxKeyLen: 128}
	s := startServer(t, withConfig(func(c *Config) { c.Limits = limits }))
	tests := []struct {
		name, line, want string
	}{
		{"short words", "DEL" + strings.Repeat(" k", 100), ":0\r\n"},
		{"at MaxBulkLen", "ECHO " + strings.Repeat("x", 10_000-len("ECHO \r")), bulkReply(strings.Repeat("x", 10_000-len("ECHO \r")))},
		{"above MaxBulkLen", "ECHO " + strings.Repeat("x", 10_000), wireInlineTooLong},
		{"MaxArgs spaces", "PING" + strings.Repeat(" ", 4096), wireInlineTooLong},
		// 1000 splits, each costing redcon about 1000 bytes: 1MB > 256KiB.
		{"costly to split", "DEL" + strings.Repeat(" k", 1000), wireInlineTooLong},
		{"costly quotes", "ECHO '" + strings.Repeat("\"", 1000) + "'", wireInlineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			c.write(tt.line + "\r\n")
			if got := c.read(); got != tt.want {
				t.Fatalf("got %.80q, want %.80q", got, tt.want)
			}
			if tt.want == wireInlineTooLong {
				c.expectClosed()
			}
		})
	}
}

// TestGuardSplitCostBoundsRedcon checks the guard's estimate of what redcon
// allocates to split an inline line against what it does allocate.
func TestGuardSplitCostBoundsRedcon(t *testing.T) {
	lines := []string{
		"PING",
		"RL.SLIDING user:ada 100 60000",
		"DEL" + strings.Repeat(" k", 300),
		`ECHO "a b c" 'd e'`,
		strings.Repeat("a ", 4<<10), // quadratic: 8KiB cost redcon 16MB
	}
	huge := Limits{MaxBulkLen: 1 << 40, MaxArgs: 1 << 40, MaxRequestLen: 1 << 40}
	for _, line := range lines {
		g := &guardConn{limits: huge}
		if ok, _ := g.scan([]byte(line + "\r")); !ok {
			t.Fatalf("%.40q refused: %v", line, g.failed)
		}
		estimate := g.splitCost()
		var args int
		allocated := bytesAllocated(func() {
			cmds, err := redcon.NewReader(strings.NewReader(line + "\r\n")).ReadCommands()
			if err != nil || len(cmds) != 1 {
				t.Fatalf("%.40q: redcon read %d commands, %v", line, len(cmds), err)
			}
			args = len(cmds[0].Args)
		})
		// The allocator rounds sizes up by at most an eighth; besides the
		// split buffers, redcon allocates its read buffers, the arguments'
		// copies and slice, and their RESP encoding.
		other := int64(16<<10 + 3*len(line) + 64*args)
		if allocated > estimate*9/8+other {
			t.Errorf("%.40q: redcon allocated %d bytes, the guard estimated %d (+%d)", line, allocated, estimate, other)
		}
	}
}

// bytesAllocated is the fewest bytes fn allocated in three runs: the least
// disturbed by whatever else the process allocates meanwhile.
func bytesAllocated(fn func()) int64 {
	least := int64(math.MaxInt64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		least = min(least, int64(after.TotalAlloc-before.TotalAlloc))
	}
	return least
}

// TestGuardClosesOnlyTheOffendingConnection checks that a protocol error
// costs its sender alone.
func TestGuardClosesOnlyTheOffendingConnection(t *testing.T) {
	s := startServer(t)
	good, bad := s.dial(t), s.dial(t)
	good.expect("+PONG\r\n", "PING")
	bad.write("*1\r\n$999999999\r\n")
	if got := bad.read(); got != wireBulkTooLong {
		t.Fatalf("got %q", got)
	}
	bad.expectClosed()
	good.expect(decision2(1, 10, 9, 0, 200), "RL.SLIDING", "k", "10", "100")
	good.expect("+PONG\r\n", "PING")
}

// TestGuardSplitCommand checks that a command arriving in many small reads
// is followed across them.
func TestGuardSplitCommand(t *testing.T) {
	stream := []byte(encode("ECHO", strings.Repeat("x", 300)) + "PING\r\n")
	g := &guardConn{limits: testLimits}
	for i := range stream {
		if ok, _ := g.scan(stream[i : i+1]); !ok {
			t.Fatalf("refused at byte %d: %v", i, g.failed)
		}
	}
	if g.state != atCommand {
		t.Fatalf("state %d after whole commands", g.state)
	}
}

// TestGuardScanCut checks where scan cuts a chunk: before the command that
// crosses a limit, or at 0 when that command began in an earlier chunk.
func TestGuardScanCut(t *testing.T) {
	limits := Limits{MaxBulkLen: 10, MaxArgs: 3, MaxRequestLen: 48}
	ping := encode("PING")
	tests := []struct {
		name    string
		chunks  []string
		wantCut int   // cut reported by the failing chunk
		wantErr error // nil: every chunk accepted
	}{
		{"all good", []string{ping, ping + "PI", "NG\r\n"}, 0, nil},
		{"bad after good", []string{ping + ping + "*4\r\n"}, 2 * len(ping), errTooManyArgs},
		{"bad begun in an earlier chunk", []string{ping + "*1\r\n$", "11\r\n"}, 0, errBulkTooLong},
		{"too large within a payload", []string{ping + "*3\r\n" + strings.Repeat("$10\r\n0123456789\r\n", 3)}, len(ping), errRequestTooLong},
		{"huge count", []string{"*9223372036854775808\r\n"}, 0, errTooManyArgs},
		// Headers read whole take a shorter path than headers cut by a
		// read; both refuse the same things.
		{"whole headers at the limits", []string{"*3\r\n$10\r\n0123456789\r\n$1\r\na\r\n$0\r\n\r\n"}, 0, nil},
		{"whole count with a leading zero", []string{ping + "*03\r\n"}, len(ping), errTooManyArgs},
		{"whole count past the limit", []string{ping + "*4\r\n$1\r\na\r\n"}, len(ping), errTooManyArgs},
		{"whole length with a leading zero", []string{"*1\r\n$01\r\na\r\n"}, 0, errBulkTooLong},
		{"whole length past the limit", []string{"*1\r\n$11\r\n"}, 0, errBulkTooLong},
		{"whole header without its LF", []string{"*1\r\r\n"}, 0, errTooManyArgs},
		{"empty count", []string{"*\r\n"}, 0, errTooManyArgs},
		{"count of zero", []string{"*0\r\n" + ping}, 0, nil},
		// A negative count is walked; the count after it, read whole,
		// must not inherit its sign (FuzzGuard found this in CI).
		{"negative count, then a count read whole", []string{"*-1\r\n*1\r\n", "$11\r\n"}, 0, errBulkTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &guardConn{limits: limits}
			for i, chunk := range tt.chunks {
				ok, cut := g.scan([]byte(chunk))
				if ok {
					continue
				}
				if i != len(tt.chunks)-1 || tt.wantErr == nil {
					t.Fatalf("chunk %d refused: %v", i, g.failed)
				}
				if cut != tt.wantCut || !errors.Is(g.failed, tt.wantErr) {
					t.Fatalf("cut %d, error %v; want %d, %v", cut, g.failed, tt.wantCut, tt.wantErr)
				}
				return
			}
			if tt.wantErr != nil {
				t.Fatalf("accepted; want %v", tt.wantErr)
			}
		})
	}
}

// TestGuardTakesWholeCommandsAtOnce checks which commands wholeCommand takes
// in one step and that it leaves every other to the walk untouched (the
// walk's refusals are TestGuardScanCut's and FuzzGuard's).
func TestGuardTakesWholeCommandsAtOnce(t *testing.T) {
	limits := Limits{MaxBulkLen: 10, MaxArgs: 3, MaxRequestLen: 48}
	tests := []struct {
		name string
		in   string
		want int // bytes taken; 0: left to the walk
	}{
		{"a decision", encode("RL.SLIDING", "k", "10"), len(encode("RL.SLIDING", "k", "10"))},
		{"followed by more", encode("PING") + "*1\r\n", len(encode("PING"))},
		{"an empty argument", "*1\r\n$0\r\n\r\n", 10},
		{"at the request limit", "*3\r\n" + strings.Repeat("$10\r\n0123456789\r\n", 2) + "$4\r\nabcd\r\n", 48},
		{"past the request limit", "*3\r\n" + strings.Repeat("$9\r\n012345678\r\n", 3), 0},
		{"inline", "PING\r\n", 0},
		{"empty", "*0\r\n", 0},
		{"cut in a payload", "*1\r\n$4\r\nPI", 0},
		{"cut before its CRLF", "*1\r\n$4\r\nPING", 0},
		{"count past the limit", "*4\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n", 0},
		{"length past the limit", "*1\r\n$11\r\n01234567890\r\n", 0},
		{"a leading zero", "*1\r\n$04\r\nPING\r\n", 0},
		{"a sign", "*1\r\n$+4\r\nPING\r\n", 0},
		{"not a bulk", "*1\r\n:4\r\n", 0},
		{"nineteen digits", "*1\r\n$0000000000000000004\r\nPING\r\n", 0},
	}
	for _, tt := range tests {
		g := &guardConn{limits: limits}
		if got := g.wholeCommand([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: took %d bytes, want %d", tt.name, got, tt.want)
		}
		if g.state != atCommand || g.cmdBytes != 0 || g.failed != nil {
			t.Errorf("%s: the guard's state changed", tt.name)
		}
	}
}

// TestGuardHugeLimits checks that limits near the top of int64 neither let a
// longer number wrap around nor let through a payload length that makes
// redcon's arithmetic overflow, or an argument count it would take for ever
// to walk.
func TestGuardHugeLimits(t *testing.T) {
	limits := Limits{MaxBulkLen: math.MaxInt64, MaxArgs: math.MaxInt64, MaxRequestLen: math.MaxInt64}
	tests := []struct {
		stream string
		want   error
	}{
		{"*1\r\n$99999999999999999999\r\n", errBulkTooLong},       // 20 digits: above MaxInt64
		{"*1\r\n$18446744073709551617\r\n", errBulkTooLong},       // 2^64+1 would wrap to 1
		{"*99999999999999999999\r\n", errTooManyArgs},             // 20 digits
		{"*1048577\r\n", errTooManyArgs},                          // redcon would walk them all on every read
		{"*1048576\r\n$1\r\n", nil},                               // Redis 6's bound
		{"*1\r\n$4611686018427387905\r\n", errBulkTooLong},        // 2^62+1: redcon's offset arithmetic could wrap
		{"*1\r\n$4611686018427387904\r\nabcdefgh", nil},           // 2^62: the longest allowed
		{"*2\r\n$4611686018427387904\r\nabcdefgh\r\n$2\r\n", nil}, // still inside the payload
	}
	for _, tt := range tests {
		g := &guardConn{limits: limits}
		ok, _ := g.scan([]byte(tt.stream))
		if tt.want == nil {
			if !ok {
				t.Errorf("%q refused: %v", tt.stream, g.failed)
			} else if g.state != inBulkBody {
				t.Errorf("%q: state %d, want inside the payload", tt.stream, g.state)
			}
			continue
		}
		if ok || !errors.Is(g.failed, tt.want) {
			t.Errorf("%q: ok %v, error %v; want %v", tt.stream, ok, g.failed, tt.want)
		}
	}
}

// BenchmarkGuardScan is the guard's cost on a pipeline of 16 decisions, the
// shape of redis-benchmark's -P 16 load.
func BenchmarkGuardScan(b *testing.B) {
	var pipeline strings.Builder
	for i := range 16 {
		pipeline.WriteString(encode("RL.SLIDING", "user:0000000"+strings.Repeat("1", 1+i%5), "100", "60000"))
	}
	p := []byte(pipeline.String())
	g := &guardConn{limits: Limits{MaxBulkLen: 512 << 20, MaxArgs: 1 << 20, MaxRequestLen: 512 << 20}}
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if ok, _ := g.scan(p); !ok {
			b.Fatal(g.failed)
		}
	}
}
