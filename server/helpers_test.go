package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// testNow is the instant the test clock starts at (2023-11-14T22:13:20Z).
const testNow = 1_700_000_000_000

// ioTimeout bounds every read and write a test makes on a connection.
const ioTimeout = 10 * time.Second

// testLimits are small enough that tests can cross them cheaply.
var testLimits = Limits{MaxBulkLen: 4096, MaxArgs: 64, MaxRequestLen: 256 << 10, MaxKeyLen: 128}

// testConfig is DefaultConfig with the test limits, serving plain
// connections on an event loop as rlserver --in-memory does (TLS ones, and
// servers over a backend of a test's, on goroutines).
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Limits, cfg.Version = testLimits, "test"
	if EventLoopsSupported {
		cfg.EventLoops = 1
	}
	return cfg
}

// testServer is a server on a free loopback port, over memory shards that
// read a debug clock fixed at testNow.
type testServer struct {
	*Server
	addr    string
	tlsAddr string // the TLS listener's, with withTLS
	shards  *cluster.MemoryShards
	clock   *cluster.DebugClock
}

// serverOptions are what startServer varies.
type serverOptions struct {
	cfg     Config
	shards  int
	noDebug bool  // start without DEBUG (no DebugClock given to New)
	held    []int // with withReplicas: the shards this node holds replicas of
	partial bool  // withReplicas was given
	tls     *tls.Config
	// backend, when set, wraps the memory shards the server is given; the
	// server does not count on it to answer within Submit.
	backend func(*cluster.MemoryShards) Shards
	// backendOnLoops keeps the event loop for a backend (withLoops).
	backendOnLoops bool
}

// option changes serverOptions.
type option func(*serverOptions)

// withShards runs n shards.
func withShards(n int) option { return func(o *serverOptions) { o.shards = n } }

// withoutDebug refuses DEBUG, as rlserver does without --enable-debug-command.
func withoutDebug() option { return func(o *serverOptions) { o.noDebug = true } }

// withReplicas makes the server a node that holds replicas of the given
// shards only (none when none are given), as a node of a cluster of more
// than three nodes: see partialShards.
func withReplicas(shards ...int) option {
	return func(o *serverOptions) { o.held, o.partial = shards, true }
}

// partialShards are memory shards as a node that holds replicas of some of
// them sees them (cluster.RaftShards): the counters of the others read zero,
// their writes are not reported to the write observer, and they are read and
// written through their leader, which the memory shards stand for.
type partialShards struct {
	*cluster.MemoryShards
	held map[int]bool
}

// Stats are zero for a shard this node holds no replica of.
func (p partialShards) Stats(shard int) engine.Stats {
	if !p.held[shard] {
		return engine.Stats{}
	}
	return p.MemoryShards.Stats(shard)
}

// ObservesWrites is false for a shard this node holds no replica of.
func (p partialShards) ObservesWrites(shard int) bool { return p.held[shard] }

// withBackend gives the server wrap's shards over the memory shards.
func withBackend(wrap func(*cluster.MemoryShards) Shards) option {
	return func(o *serverOptions) { o.backend = wrap }
}

// withLoops keeps the event loop over a backend, which startServer
// otherwise serves with a goroutine per connection.
func withLoops() option { return func(o *serverOptions) { o.backendOnLoops = true } }

// withTLS also serves TLS clients, on a listener of their own.
func withTLS(cfg *tls.Config) option { return func(o *serverOptions) { o.tls = cfg } }

// withConfig lets a test change the configuration.
func withConfig(fn func(*Config)) option { return func(o *serverOptions) { fn(&o.cfg) } }

// startServer serves on 127.0.0.1 until the test ends; cleanup closes the
// server, checks that Serve returned, then stops the shards.
func startServer(t testing.TB, opts ...option) *testServer {
	t.Helper()
	return startServerOn(t, "127.0.0.1:0", opts...)
}

// startServerOn is startServer listening on addr.
func startServerOn(t testing.TB, addr string, opts ...option) *testServer {
	t.Helper()
	o := serverOptions{cfg: testConfig(), shards: 4}
	for _, opt := range opts {
		opt(&o)
	}
	clock := &cluster.DebugClock{}
	clock.Set(testNow)
	shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: o.shards, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	o.cfg.Clock = clock
	if !o.noDebug {
		o.cfg.Debug = clock
	}
	// What cmd/rlserver gives a server over memory shards: they answer
	// within Submit, and take backups.
	o.cfg.AnswersInSubmit, o.cfg.Backups = o.backend == nil, shards
	var backend Shards = shards
	if o.partial {
		p := partialShards{MemoryShards: shards, held: map[int]bool{}}
		for _, shard := range o.held {
			p.held[shard] = true
		}
		backend = p
	}
	if o.backend != nil {
		backend = o.backend(shards)
		if !o.backendOnLoops {
			o.cfg.EventLoops = 0 // tests of a backend's own are about goroutines
		}
	}
	srv, err := New(o.cfg, backend)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: srv, addr: ln.Addr().String(), shards: shards, clock: clock}
	served, listeners := make(chan error, 2), 1
	go func() { served <- srv.Serve(ln) }()
	if o.tls != nil {
		listeners++
		tln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ts.tlsAddr = tln.Addr().String()
		go func() { served <- srv.ServeTLS(tln, o.tls) }()
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for range listeners {
			select {
			case err := <-served:
				// A test that ends at once may close the server before its
				// Serve has begun: that one returns ErrServerClosed.
				if err != nil && !errors.Is(err, ErrServerClosed) {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(ioTimeout):
				t.Errorf("Serve did not return after Close")
			}
		}
		shards.Close()
	})
	return ts
}

// rawConn is a RESP client that works on wire bytes, so tests can assert
// exactly what the server sends.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// dial connects to the test server; the connection closes when the test ends.
func (s *testServer) dial(t testing.TB) *rawConn {
	t.Helper()
	return dialAddr(t, s.addr)
}

// dialAddr connects to addr; the connection closes when the test ends.
func dialAddr(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(ioTimeout))
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// encode is the RESP array of bulk strings a client sends for args.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// write sends raw bytes in one write.
func (c *rawConn) write(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, raw); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send sends one command.
func (c *rawConn) send(args ...string) { c.t.Helper(); c.write(encode(args...)) }

// do sends one command and returns its reply's wire text.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// expect sends one command and checks its reply's wire text.
func (c *rawConn) expect(want string, args ...string) {
	c.t.Helper()
	if got := c.do(args...); got != want {
		c.t.Fatalf("%q:\n got %q\nwant %q", args, got, want)
	}
}

// read returns the wire text of the next reply.
func (c *rawConn) read() string {
	c.t.Helper()
	var b strings.Builder
	if err := readValue(c.r, &b); err != nil {
		c.t.Fatalf("read reply: %v (read so far %q)", err, b.String())
	}
	return b.String()
}

// readValue copies one RESP2 or RESP3 value from r to b.
func readValue(r *bufio.Reader, b *strings.Builder) error {
	line, err := r.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("malformed line %q", line)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return nil
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(r, body)
		b.Write(body)
		return err
	case '*', '~', '>':
	case '%', '|':
		n *= 2
	default:
		return nil
	}
	for range n {
		if err := readValue(r, b); err != nil {
			return err
		}
	}
	return nil
}

// expectClosed checks that the server has closed the connection and sent
// nothing more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	rest, err := io.ReadAll(c.r)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		c.t.Fatalf("waiting for close: %v (read %q)", err, rest)
	}
	if len(rest) > 0 {
		c.t.Fatalf("after the last reply the server sent %q", rest)
	}
}

// isReset reports a connection reset by the peer, which is how a close with
// unread input can reach the client.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// respError is a decoded error reply.
type respError string

// respMap is a decoded RESP3 map: key, value, key, value ...
type respMap []any

// respSet is a decoded RESP3 set.
type respSet []any

// parse decodes the wire text of one reply: simple and bulk strings become
// string, integers int64, nulls nil, arrays []any, errors respError, RESP3
// maps respMap and sets respSet (and the other RESP3 types resp.Value).
func parse(t testing.TB, wire string) any {
	t.Helper()
	vs, rest, err := resp.Parse(nil, wire)
	if err != nil {
		t.Fatalf("parse %q: %v", wire, err)
	}
	if rest != "" {
		t.Fatalf("parse %q: trailing bytes", wire)
	}
	v, _ := decoded(vs)
	return v
}

// decoded is the first of vs as parse returns it, and the values after it.
func decoded(vs []resp.Value) (any, []resp.Value) {
	v, rest := vs[0], vs[1:]
	switch v.Kind {
	case resp.KindSimple, resp.KindBulk:
		return v.Str, rest
	case resp.KindError:
		return respError(v.Str), rest
	case resp.KindInt:
		return v.Int, rest
	case resp.KindNull:
		return nil, rest
	}
	if !v.IsAggregate() {
		return v, rest // a boolean, a double: as it is
	}
	n := int(v.Int)
	if v.Kind == resp.KindMap {
		n *= 2
	}
	items := make([]any, n)
	for i := range items {
		items[i], rest = decoded(rest)
	}
	switch v.Kind {
	case resp.KindMap:
		return respMap(items), rest
	case resp.KindSet:
		return respSet(items), rest
	}
	return items, rest
}

// errReply is the wire text of an error reply.
func errReply(text string) string { return "-" + text + "\r\n" }

// intReply is the wire text of an integer reply.
func intReply(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }

// bulkReply is the wire text of a bulk string reply.
func bulkReply(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// arrayReply is the wire text of an array of already encoded items.
func arrayReply(items ...string) string {
	return "*" + strconv.Itoa(len(items)) + "\r\n" + strings.Join(items, "")
}

// decision2 is the RESP2 wire text of an RL.* decision.
func decision2(allowed, limit, remaining, retry, reset int64) string {
	return arrayReply(intReply(allowed), intReply(limit), intReply(remaining), intReply(retry), intReply(reset))
}

// decision3 is the RESP3 wire text of an RL.* decision.
func decision3(allowed, limit, remaining, retry, reset int64) string {
	return "%5\r\n" + bulkReply("allowed") + intReply(allowed) + bulkReply("limit") + intReply(limit) +
		bulkReply("remaining") + intReply(remaining) + bulkReply("retry_after_ms") + intReply(retry) +
		bulkReply("reset_after_ms") + intReply(reset)
}

// contains reports whether s contains sub.
func contains(s, sub string) bool { return strings.Contains(s, sub) }
