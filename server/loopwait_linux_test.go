//go:build linux

package server

import (
	"cmp"
	"crypto/sha1"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
)

// laterShards are memory shards that answer every request on a goroutine of
// its own after Submit returns, as durable shards answer once the commit is
// made: an event loop must suspend a pipeline for them, never wait.
type laterShards struct{ *cluster.MemoryShards }

func (l laterShards) Submit(shard int, r *cluster.Request) { go l.MemoryShards.Submit(shard, r) }

// startLaterServer is a test server on an event loop over laterShards.
func startLaterServer(t *testing.T, opts ...option) *testServer {
	t.Helper()
	backend := withBackend(func(m *cluster.MemoryShards) Shards { return laterShards{m} })
	return startServer(t, append([]option{withLoops(), backend}, opts...)...)
}

// startStuckServer is a test server on an event loop whose shard 1 of 2
// never answers, with a short request timeout; the backend says what the
// stuck shard holds.
func startStuckServer(t *testing.T, timeout time.Duration, opts ...option) (*testServer, *stuckShards) {
	t.Helper()
	var backend *stuckShards
	s := startServer(t, append([]option{withShards(2), withLoops(), withConfig(func(c *Config) { c.RequestTimeout = timeout }),
		withBackend(func(m *cluster.MemoryShards) Shards {
			backend = &stuckShards{MemoryShards: m, stuck: 1}
			return backend
		})}, opts...)...)
	return s, backend
}

// A pipeline of decisions, errors and commands on the connection's own
// state is answered on the loop in order, however the shards' answers
// interleave, and the connection stays on the loop.
func TestLoopSuspendsForShardsThatAnswerLater(t *testing.T) {
	s := startLaterServer(t)
	conn := s.dial(t)
	id := conn.clientID()
	for round := range 3 { // a pipeline, then the next on the same connection
		a, b := keyOnShard(t, fmt.Sprint("a", round), 0, 4), keyOnShard(t, fmt.Sprint("b", round), 2, 4)
		steps := []step{
			{cmd("RL.SLIDING", a, "3", "1000"), decision2(1, 3, 2, 0, 2000)},
			{cmd("RL.SLIDING", b, "3", "1000"), decision2(1, 3, 2, 0, 2000)},
			{cmd("PING"), "+PONG\r\n"},
			{cmd("RL.SLIDING", a, "3", "1000"), decision2(1, 3, 1, 0, 2000)},
			{cmd("NOSUCH", "x"), "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
			{cmd("EXISTS", a, b, "nokey"), intReply(2)},
			{cmd("HELLO", "3"), helloReply(true, id)},
			{cmd("RL.SLIDING", a, "3", "1000"), decision3(1, 3, 0, 0, 2000)},
			{cmd("RL.SLIDING", a, "3", "1000"), decision3(0, 3, 0, 1334, 2000)}, // (the sliding estimate)
			{cmd("HELLO", "2"), helloReply(false, id)},
			{cmd("ECHO", "done"), bulkReply("done")},
		}
		conn.expectPipeline(steps)
	}
	if _, onLoop := loopSockOf(t, s); !onLoop {
		t.Fatal("the connection left the loop")
	}
}

// Many connections at pipeline 1, each suspended on every decision, share
// one budget: it admits exactly its limit, and every connection stays on
// the loop.
func TestLoopSharesABudgetAcrossSuspendedConnections(t *testing.T) {
	s := startLaterServer(t)
	const conns, each, limit = 8, 60, 300
	allowed := make([]int, conns)
	var wg sync.WaitGroup
	for i := range conns {
		c := s.dial(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				c.send("RL.SLIDING", "shared", fmt.Sprint(limit), "60000")
				reply := c.read()
				if strings.HasPrefix(reply, "*5\r\n:1\r\n") {
					allowed[i]++
				} else if !strings.HasPrefix(reply, "*5\r\n:0\r\n") {
					t.Errorf("connection %d: %q", i, reply)
					return
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range allowed {
		total += n
	}
	if total != limit {
		t.Fatalf("admitted %d of %d requests, want exactly the limit %d (%v)", total, conns*each, limit, allowed)
	}
	if n := s.loops.clients(); n != conns {
		t.Fatalf("%d connections on the loop, want all %d", n, conns)
	}
}

// A pipeline longer than a segment is sent to the shards a segment at a
// time, each suspended and resumed: every reply comes, in order.
func TestLoopAnswersALongPipelineInSegments(t *testing.T) {
	s := startLaterServer(t, withShards(3))
	conn := s.dial(t)
	const n, limit = 3*maxSegment + 17, 2000
	var req strings.Builder
	for range n {
		req.WriteString(encode("RL.FIXED", "long", fmt.Sprint(limit), "60000"))
	}
	conn.write(req.String())
	for i := range n {
		want := fmt.Sprintf("*5\r\n:1\r\n:%d\r\n:%d\r\n", limit, limit-i-1)
		if i >= limit {
			want = fmt.Sprintf("*5\r\n:0\r\n:%d\r\n:0\r\n", limit)
		}
		if got := conn.read(); !strings.HasPrefix(got, want) {
			t.Fatalf("reply %d: %q, want %q...", i, got, want)
		}
	}
	conn.expect("+PONG\r\n", "PING")
	if _, onLoop := loopSockOf(t, s); !onLoop {
		t.Fatal("the connection left the loop")
	}
}

// A command that may wait other than for a segment (DBSIZE and SCRIPT
// LOAD ask every shard, MEMORY PURGE collects) is answered by a goroutine
// while the connection waits, and a transaction's EXEC is one segment: the
// replies come in order and the connection stays on the loop, whether its
// shards answer later or at once.
func TestLoopAnswersACommandThatMayWaitAside(t *testing.T) {
	// These servers have no Lua: the shards refuse scripts, after SCRIPT
	// LOAD has asked every one.
	const script, noScripting = "return 1", "-ERR scripting is not enabled on this server\r\n"
	sha := fmt.Sprintf("%x", sha1.Sum([]byte(script)))
	for _, tt := range []struct {
		name  string
		start func(*testing.T, ...option) *testServer
	}{
		{"shards answer later", startLaterServer},
		{"shards answer at once", func(t *testing.T, opts ...option) *testServer {
			return startServer(t, append([]option{withLoops()}, opts...)...)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.start(t, withShards(2))
			conn := s.dial(t)
			for round := range 2 { // a pipeline, then the next on the same connection
				k := fmt.Sprint("k", round)
				conn.expectPipeline([]step{
					{cmd("RL.SLIDING", k, "5", "1000"), decision2(1, 5, 4, 0, 2000)},
					{cmd("DBSIZE"), intReply(int64(1 + round))},
					{cmd("RL.SLIDING", k, "5", "1000"), decision2(1, 5, 3, 0, 2000)},
					{cmd("MULTI"), "+OK\r\n"},
					{cmd("RL.SLIDING", k, "5", "1000"), "+QUEUED\r\n"},
					{cmd("PING"), "+QUEUED\r\n"},
					{cmd("EXEC"), arrayReply(decision2(1, 5, 2, 0, 2000), "+PONG\r\n")},
					{cmd("SCRIPT", "LOAD", script), noScripting}, // every shard answers
					{cmd("EVALSHA", sha, "1", fmt.Sprint("n", round)), noScripting},
					{cmd("MEMORY", "PURGE"), "+OK\r\n"},
					{cmd("SCRIPT", "EXISTS", "0000"), arrayReply(intReply(0))},
					{cmd("PING"), "+PONG\r\n"},
				})
				if _, onLoop := loopSockOf(t, s); !onLoop {
					t.Fatalf("round %d: the connection left the loop", round)
				}
			}
		})
	}
}

// A command answered aside that waits for a shard that never answers holds
// only its own connection: the loop answers others meanwhile, the request
// timeout answers it with TRYAGAIN in its place, and what the client sent
// after it is answered next, on the loop. A shutdown meanwhile writes the
// reply before it closes the connection.
func TestLoopCommandAsideDoesNotHoldTheLoop(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, backend := startStuckServer(t, timeout)
	stuck, other := s.dial(t), s.dial(t)
	other.expect("+PONG\r\n", "PING")
	start := time.Now()
	stuck.write(encode("PING") + encode("SCRIPT", "LOAD", "return 1") + encode("ECHO", "after"))
	other.expect("+PONG\r\n", "PING")
	other.expect(decision2(1, 10, 9, 0, 200), "RL.SLIDING", keyOnShard(t, "free", 0, 2), "10", "100")
	if took := time.Since(start); took >= timeout {
		t.Fatalf("another connection was answered after %v, the request timeout", took)
	}
	if got := stuck.read(); got != "+PONG\r\n" { // written with the reply aside, in one write
		t.Fatalf("before the command aside: %q", got)
	}
	if got := stuck.read(); !strings.HasPrefix(got, "-TRYAGAIN ") {
		t.Fatalf("SCRIPT LOAD with a shard that never answers: %q, want TRYAGAIN", got)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("answered after %v, before the request timeout %v", took, timeout)
	}
	if got := stuck.read(); got != bulkReply("after") {
		t.Fatalf("after it: %q", got)
	}
	if _, onLoop := loopSockOfClient(t, s, 0); !onLoop {
		t.Fatal("the connection left the loop")
	}

	stuck.send("SCRIPT", "LOAD", "return 2")
	poll.Until(t, ioTimeout, "SCRIPT LOAD to reach the stuck shard", func() (bool, error) {
		n := len(backend.heldRequests())
		return n == 2, fmt.Errorf("%d held", n)
	})
	closeAnsweringTryAgain(t, s, stuck)
}

// A connection that turns CLIENT TRACKING on leaves the loop (its pushes
// are written by another goroutine), after the pipeline that turned it on
// is answered, a command aside included, in order.
func TestLoopTrackingAfterACommandAside(t *testing.T) {
	s := startLaterServer(t)
	conn := s.dial(t)
	conn.expectPipeline([]step{
		{cmd("HELLO", "3"), helloReply(true, conn.clientID())},
		{cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n"},
		{cmd("DBSIZE"), intReply(0)},
		{cmd("RL.SLIDING", "t", "5", "1000"), decision3(1, 5, 4, 0, 2000)},
	})
	// The loop hands it over once the replies are written.
	poll.Until(t, ioTimeout, "the tracking connection to leave the loop", func() (bool, error) {
		_, onLoop := loopSockOf(t, s)
		return !onLoop, nil
	})
	conn.expect(decision3(1, 5, 3, 0, 2000), "RL.SLIDING", "t", "5", "1000")
}

// CLIENT CACHING YES covers the one command after it, there a command
// answered aside (DBSIZE): the read after that is not tracked, so another
// connection's write sends no invalidation.
func TestLoopCommandAsideEndsClientCachingsWindow(t *testing.T) {
	s := startLaterServer(t)
	a, b := s.dial(t), s.dial(t)
	a.expectPipeline([]step{
		{cmd("HELLO", "3"), helloReply(true, a.clientID())},
		{cmd("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n"},
		{cmd("SET", "k", "v1"), "+OK\r\n"},
		{cmd("CLIENT", "CACHING", "YES"), "+OK\r\n"},
		{cmd("DBSIZE"), intReply(1)},
		{cmd("GET", "k"), bulkReply("v1")}, // the second command after CACHING: not tracked
	})
	b.expect("+OK\r\n", "SET", "k", "v2")
	a.expectQuiet()
}

// A shard that never answers holds only its own connection: the loop
// answers others meanwhile, and the request timeout answers the suspended
// pipeline with TRYAGAIN in its place, without waiting on the loop.
func TestLoopRequestTimeoutWithoutWaiting(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, _ := startStuckServer(t, timeout)
	stuckKey, freeKey := keyOnShard(t, "stuck", 1, 2), keyOnShard(t, "free", 0, 2)
	stuck, other := s.dial(t), s.dial(t)
	other.expect("+PONG\r\n", "PING")
	for round := range 2 {
		start := time.Now()
		stuck.write(encode("RL.SLIDING", freeKey, "10", "1000") + encode("RL.SLIDING", stuckKey, "10", "1000") + encode("PING"))
		// The loop is free while the stuck pipeline waits.
		other.expect("+PONG\r\n", "PING")
		other.expect(decision2(1, 10, int64(9-2*round), 0, 200), "RL.SLIDING", freeKey+"-other", "10", "100")
		other.expect(decision2(1, 10, int64(8-2*round), 0, 200), "RL.SLIDING", freeKey+"-other", "10", "100")
		if took := time.Since(start); took >= timeout {
			t.Fatalf("round %d: another connection was answered after %v, the request timeout", round, took)
		}
		replies := []string{stuck.read(), stuck.read(), stuck.read()}
		if took := time.Since(start); took < timeout || took > timeout+time.Second {
			t.Errorf("round %d: answered after %v, want about %v", round, took, timeout)
		}
		if want := decision2(1, 10, int64(9-round), 0, 2000); replies[0] != want {
			t.Errorf("round %d: the other shard's decision %q, want %q", round, replies[0], want)
		}
		if !strings.HasPrefix(replies[1], "-TRYAGAIN ") {
			t.Errorf("round %d: the stuck shard's reply %q, want TRYAGAIN", round, replies[1])
		}
		if replies[2] != "+PONG\r\n" {
			t.Errorf("round %d: then %q", round, replies[2])
		}
	}
	if _, onLoop := loopSockOfClient(t, s, 0); !onLoop {
		t.Fatal("the stuck connection left the loop")
	}
}

// A shutdown that finds a pipeline suspended writes its replies (here the
// request timeout's) before it closes the connection; a client that went
// away while suspended is forgotten once its pipeline is answered.
func TestLoopClosesASuspendedConnectionOnceAnswered(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, backend := startStuckServer(t, timeout)
	stuckKey := keyOnShard(t, "stuck", 1, 2)
	gone := s.dial(t)
	gone.send("RL.SLIDING", stuckKey, "10", "1000")
	gone.conn.Close()
	stuck := s.dial(t)
	stuck.send("RL.SLIDING", stuckKey, "10", "1000")
	poll.Until(t, ioTimeout, "both pipelines to be suspended", func() (bool, error) {
		n := len(backend.heldRequests())
		return n == 2, fmt.Errorf("%d suspended", n)
	})
	closeAnsweringTryAgain(t, s, stuck)
	n := 0
	s.eachClient(func(*conn) { n++ })
	if n != 0 {
		t.Fatalf("%d connections left after Close", n)
	}
}

// A protocol error after decisions in the same write: the decisions are
// answered once the shards answer, then the error, then the connection
// closes.
func TestLoopProtocolErrorAfterASuspendedSegment(t *testing.T) {
	s := startLaterServer(t)
	for _, tt := range []struct{ name, bad, want string }{
		{"guard", "*2\r\n$4\r\nECHO\r\n$4097\r\n", wireBulkTooLong},
		{"parser", "*1\r\n:4\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			key := "proto-" + tt.name
			c.write(encode("RL.SLIDING", key, "5", "1000") + encode("RL.SLIDING", key, "5", "1000") + tt.bad)
			want := decision2(1, 5, 4, 0, 2000) + decision2(1, 5, 3, 0, 2000) + tt.want
			if got := c.read() + c.read() + c.read(); got != want {
				t.Fatalf("got %q\nwant %q", got, want)
			}
			c.expectClosed()
		})
	}
}

// loopSockOfClient is the loop socket under the server's i-th connection
// (in the order they connected), and whether the loop still serves it.
func loopSockOfClient(t *testing.T, s *testServer, i int) (ls *loopSock, onLoop bool) {
	t.Helper()
	var all []*conn
	s.eachClient(func(c *conn) { all = append(all, c) })
	if i >= len(all) {
		t.Fatalf("no connection %d of %d", i, len(all))
	}
	slices.SortFunc(all, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	l, ok := all[i].drain.Conn.(*loopSock)
	if !ok {
		t.Fatalf("connection %d is not on an event loop", i)
	}
	return l, l.goConn() == nil
}

// Bytes that arrive while the connection is suspended wait in the socket
// (the loop stops watching it meanwhile, rather than wake for bytes it
// cannot read yet), and are answered, in order, once it resumes.
func TestLoopReadsWhatArrivedWhileSuspended(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s, backend := startStuckServer(t, timeout)
	stuck := s.dial(t)
	stuck.send("RL.SLIDING", keyOnShard(t, "stuck", 1, 2), "10", "1000")
	poll.Until(t, ioTimeout, "the pipeline to be suspended", func() (bool, error) {
		return len(backend.heldRequests()) == 1, nil
	})
	stuck.write(encode("PING") + encode("ECHO", "after"))
	if ls, onLoop := loopSockOf(t, s); !onLoop || ls == nil {
		t.Fatal("the connection left the loop")
	}
	if got := stuck.read(); !strings.HasPrefix(got, "-TRYAGAIN ") {
		t.Fatalf("the suspended pipeline's reply %q, want TRYAGAIN", got)
	}
	if got := stuck.read() + stuck.read(); got != "+PONG\r\n"+bulkReply("after") {
		t.Fatalf("then %q", got)
	}
	stuck.expect(decision2(1, 10, 9, 0, 2000), "RL.SLIDING", keyOnShard(t, "free", 0, 2), "10", "1000")
}

// A cluster client asks for the topology on the connections it then sends
// decisions on: CLUSTER's reads answer on the loop, and the subcommands
// that change the cluster (they wait for its catalogue) are answered aside.
func TestLoopAnswersClusterReadsAtOnce(t *testing.T) {
	s := startLaterServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster = newFakeCluster(2, "n1", "n2") }))
	conn := s.dial(t)
	for _, sub := range []string{"SLOTS", "SHARDS", "NODES", "INFO", "MYID", "KEYSLOT"} {
		args := []string{"CLUSTER", sub}
		if sub == "KEYSLOT" {
			args = append(args, localKey)
		}
		if got := conn.do(args...); strings.HasPrefix(got, "-") {
			t.Fatalf("CLUSTER %s: %q", sub, got)
		}
	}
	conn.expect(decision2(1, 5, 4, 0, 2000), "RL.SLIDING", localKey, "5", "1000")
	if _, onLoop := loopSockOf(t, s); !onLoop {
		t.Fatal("the cluster client left the loop")
	}
	if got := conn.do("CLUSTER", "REBALANCE", "DRYRUN"); !strings.HasPrefix(got, "-") { // answered aside
		t.Fatalf("CLUSTER REBALANCE on a fake that cannot change: %q", got)
	}
	if _, onLoop := loopSockOf(t, s); !onLoop {
		t.Fatal("the cluster client left the loop")
	}
	conn.expect(decision2(1, 5, 3, 0, 2000), "RL.SLIDING", localKey, "5", "1000")
}

// A server that closes while a command aside still waits (past the
// shutdown's bound) closes the connection without waiting for it; the
// goroutine answering it lets the server forget the connection once done.
func TestLoopClosesWhileACommandAsideWaits(t *testing.T) {
	const timeout = 500 * time.Millisecond
	s, backend := startStuckServer(t, timeout, withConfig(func(c *Config) { c.Shutdown = 50 * time.Millisecond }))
	rc := s.dial(t)
	rc.send("SCRIPT", "LOAD", "return 1")
	poll.Until(t, ioTimeout, "SCRIPT LOAD to reach the stuck shard", func() (bool, error) {
		return len(backend.heldRequests()) == 1, nil
	})
	start := time.Now()
	if err := s.Server.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took >= timeout {
		t.Fatalf("Close took %v: it waited for the command aside", took)
	}
	rc.expectClosed()
	poll.Until(t, ioTimeout, "the connection to be forgotten", func() (bool, error) {
		n := 0
		s.eachClient(func(*conn) { n++ })
		return n == 0, fmt.Errorf("%d connections left", n)
	})
}

// closeAnsweringTryAgain closes the server while conn waits for a shard that
// never answers: the request timeout's TRYAGAIN is written before the
// connection closes, and Close returns.
func closeAnsweringTryAgain(t *testing.T, s *testServer, conn *rawConn) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- s.Server.Close() }()
	if got := conn.read(); !strings.HasPrefix(got, "-TRYAGAIN ") {
		t.Fatalf("the reply during a shutdown: %q, want TRYAGAIN", got)
	}
	conn.expectClosed()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Close did not return")
	}
}
