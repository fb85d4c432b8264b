package server

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// invalidation is the wire text of Redis's invalidate push for one key.
func invalidation(key string) string {
	return ">2\r\n" + bulkReply("invalidate") + "*1\r\n" + bulkReply(key)
}

// nullInvalidationWire is the push that invalidates every key (FLUSHALL).
const nullInvalidationWire = ">2\r\n$10\r\ninvalidate\r\n_\r\n"

// tracking opens a RESP3 connection and turns tracking on with opts.
func (s *testServer) tracking(t *testing.T, opts ...string) *rawConn {
	t.Helper()
	c := s.dial(t)
	if got := c.do("HELLO", "3"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3: %q", got)
	}
	c.expect("+OK\r\n", append([]string{"CLIENT", "TRACKING", "ON"}, opts...)...)
	return c
}

// expectQuiet checks that nothing was sent to c before the reply to a PING:
// an invalidation queued for it would come first.
func (c *rawConn) expectQuiet() {
	c.t.Helper()
	c.expect("+PONG\r\n", "PING")
}

// The reproduction of issue 6, on two RESP3 connections: after A reads k,
// B's write sends A exactly Redis's push, and only once: the key is then
// forgotten until A reads it again.
func TestTrackingInvalidatesAsRedis(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t)
	b := s.dial(t)
	b.expect("+OK\r\n", "SET", "k", "v1")
	a.expect(bulkReply("v1"), "GET", "k")
	b.expect("+OK\r\n", "SET", "k", "v2")
	if got := a.read(); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n" {
		t.Fatalf("A got %q, want Redis's invalidate push for k", got)
	}
	b.expect("+OK\r\n", "SET", "k", "v3")
	a.expectQuiet()
	// Read again, tracked again; DEL is a write too.
	a.expect(bulkReply("v3"), "GET", "k")
	b.expect(":1\r\n", "DEL", "k")
	if got := a.read(); got != invalidation("k") {
		t.Fatalf("after DEL A got %q", got)
	}
}

// Decisions are writes: RL.SLIDING on a key a tracking connection read (with
// PTTL, TTL, EXISTS, TYPE, RL.INFO, MEMORY USAGE) invalidates it, and RL.ALL
// invalidates each of its limits' keys.
func TestTrackingDecisionsInvalidateTheirKeys(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t)
	b := s.dial(t)
	b.do("RL.SLIDING", "rl:k", "10", "60000")
	reads := [][]string{
		{"PTTL", "rl:k"}, {"TTL", "rl:k"}, {"EXISTS", "rl:k"}, {"TYPE", "rl:k"},
		{"RL.INFO", "rl:k"}, {"MEMORY", "USAGE", "rl:k"},
	}
	for _, read := range reads {
		a.do(read...)
		b.do("RL.SLIDING", "rl:k", "10", "60000")
		if got := a.read(); got != invalidation("rl:k") {
			t.Fatalf("%v, then RL.SLIDING: A got %q", read, got)
		}
	}
	a.do("EXISTS", "{u}:a", "{u}:b")
	b.do("RL.ALL", "SLIDING", "{u}:a", "10", "60000", "FIXED", "{u}:b", "10", "60000")
	got := a.read() + a.read()
	if got != invalidation("{u}:a")+invalidation("{u}:b") && got != invalidation("{u}:b")+invalidation("{u}:a") {
		t.Fatalf("RL.ALL: A got %q, want both keys invalidated", got)
	}
	a.expectQuiet()
}

// OPTIN (rueidis's mode): only the keys of the command after CLIENT CACHING
// YES are tracked, or of a whole MULTI ... EXEC after it, as rueidis's
// DoCache sends them.
func TestTrackingOptin(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t, "OPTIN")
	b := s.dial(t)
	b.expect("+OK\r\n", "SET", "k", "v1")
	a.expect(bulkReply("v1"), "GET", "k") // no CLIENT CACHING YES: not tracked
	b.expect("+OK\r\n", "SET", "k", "v2")
	a.expectQuiet()

	a.run([]step{
		{cmd("CLIENT", "CACHING", "YES"), "+OK\r\n"},
		{cmd("GET", "k"), bulkReply("v2")},
		{cmd("GET", "other"), "_\r\n"}, // the second command after CACHING: not tracked
	})
	b.expect("+OK\r\n", "SET", "other", "x")
	b.expect("+OK\r\n", "SET", "k", "v3")
	if got := a.read(); got != invalidation("k") {
		t.Fatalf("A got %q, want k invalidated", got)
	}
	a.expectQuiet()

	// rueidis's DoCache: CLIENT CACHING YES, MULTI, PTTL, GET, EXEC.
	a.run([]step{
		{cmd("CLIENT", "CACHING", "YES"), "+OK\r\n"},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("PTTL", "k"), "+QUEUED\r\n"},
		{cmd("GET", "k"), "+QUEUED\r\n"},
		{cmd("EXEC"), "*2\r\n" + intReply(-1) + bulkReply("v3")},
	})
	b.expect("+OK\r\n", "SET", "k", "v4")
	if got := a.read(); got != invalidation("k") {
		t.Fatalf("after DoCache's transaction A got %q, want k invalidated", got)
	}
	// The transaction ended CLIENT CACHING's effect.
	a.expect(bulkReply("v4"), "GET", "k")
	b.expect("+OK\r\n", "SET", "k", "v5")
	a.expectQuiet()
}

// OPTOUT: every key is tracked except those of the command after CLIENT
// CACHING NO.
func TestTrackingOptout(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t, "OPTOUT")
	b := s.dial(t)
	a.expect("+OK\r\n", "CLIENT", "CACHING", "NO")
	a.expect("_\r\n", "GET", "skipped")
	a.expect("_\r\n", "GET", "tracked")
	b.expect("+OK\r\n", "SET", "skipped", "x")
	b.expect("+OK\r\n", "SET", "tracked", "x")
	if got := a.read(); got != invalidation("tracked") {
		t.Fatalf("A got %q, want only the key read without CACHING NO", got)
	}
	a.expectQuiet()
}

// A connection's own write invalidates its key, after the write's reply;
// with NOLOOP it does not, and the key is forgotten for it, as in Redis.
func TestTrackingNoloop(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t)
	a.expect("_\r\n", "GET", "k")
	a.expect("+OK\r\n", "SET", "k", "mine") // the reply first, then the push
	if got := a.read(); got != invalidation("k") {
		t.Fatalf("own write without NOLOOP: A got %q", got)
	}

	n := s.tracking(t, "NOLOOP")
	b := s.dial(t)
	n.expect(bulkReply("mine"), "GET", "k")
	n.expect("+OK\r\n", "SET", "k", "again")
	n.expectQuiet()
	b.expect("+OK\r\n", "SET", "k", "theirs")
	n.expectQuiet()
	n.expect(bulkReply("theirs"), "GET", "k")
	b.expect("+OK\r\n", "SET", "k", "later")
	if got := n.read(); got != invalidation("k") {
		t.Fatalf("NOLOOP, another connection's write: got %q", got)
	}
}

// CLIENT TRACKING OFF stops the pushes and forgets the connection's keys;
// CLIENT TRACKINGINFO, GETREDIR and LIST report the state as Redis does.
func TestTrackingOffAndIntrospection(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t, "OPTIN", "NOLOOP")
	b := s.dial(t)
	a.run([]step{
		{cmd("CLIENT", "GETREDIR"), ":0\r\n"},
		{cmd("CLIENT", "CACHING", "YES"), "+OK\r\n"},
		{cmd("CLIENT", "TRACKINGINFO"), "%3\r\n" + bulkReply("flags") + "~4\r\n" + bulkReply("on") + bulkReply("optin") +
			bulkReply("caching-yes") + bulkReply("noloop") + bulkReply("redirect") + ":0\r\n" + bulkReply("prefixes") + "*0\r\n"},
		{cmd("GET", "k"), "_\r\n"},
	})
	if info := a.do("CLIENT", "INFO"); !strings.Contains(info, " flags=t ") || !strings.Contains(info, " redir=0 ") {
		t.Fatalf("CLIENT INFO while tracking: %q", info)
	}
	a.expect("+OK\r\n", "CLIENT", "TRACKING", "OFF")
	b.expect("+OK\r\n", "SET", "k", "v")
	a.expectQuiet()
	a.run([]step{
		{cmd("CLIENT", "GETREDIR"), ":-1\r\n"},
		{cmd("CLIENT", "TRACKINGINFO"), "%3\r\n" + bulkReply("flags") + "~1\r\n" + bulkReply("off") +
			bulkReply("redirect") + ":-1\r\n" + bulkReply("prefixes") + "*0\r\n"},
		{cmd("CLIENT", "CACHING", "YES"), errReply("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")},
	})
	if info := a.do("CLIENT", "INFO"); !strings.Contains(info, " flags=N ") || !strings.Contains(info, " redir=-1 ") {
		t.Fatalf("CLIENT INFO after OFF: %q", info)
	}
	if info := a.do("INFO", "clients"); !strings.Contains(info, "tracking_clients:0\r\n") {
		t.Fatalf("INFO clients after OFF: %q", info)
	}

	// RESET turns tracking off too.
	a.expect("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expect(bulkReply("v"), "GET", "k")
	a.expect("+RESET\r\n", "RESET")
	b.expect("+OK\r\n", "SET", "k", "w")
	a.expectQuiet()
}

// FLUSHALL invalidates everything with one null push, as Redis sends it.
func TestTrackingFlushAllSendsANullInvalidation(t *testing.T) {
	s := startServer(t, withShards(1))
	a := s.tracking(t)
	b := s.dial(t)
	a.expect("_\r\n", "GET", "k")
	b.expect("+OK\r\n", "FLUSHALL")
	if got := a.read(); got != nullInvalidationWire {
		t.Fatalf("A got %q, want the null invalidation", got)
	}
	a.expectQuiet()
	b.expect("+OK\r\n", "SET", "k", "v") // the flush forgot k
	a.expectQuiet()
}

// Every shard reports its writes: a key on each shard is invalidated.
func TestTrackingEveryShard(t *testing.T) {
	s := startServer(t, withShards(4))
	a := s.tracking(t)
	b := s.dial(t)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	shards := map[int]bool{}
	for _, k := range keys {
		shards[s.shards.ShardOf(cluster.Slot([]byte(k)))] = true
		a.expect("_\r\n", "GET", k)
	}
	if len(shards) < 2 {
		t.Fatalf("keys %v all on one shard", keys)
	}
	for _, k := range keys {
		b.expect("+OK\r\n", "SET", k, "v")
		if got := a.read(); got != invalidation(k) {
			t.Fatalf("SET %s: A got %q", k, got)
		}
	}
}

// The options Redis refuses, in its words, and those rlserver does not
// support, in its own.
func TestTrackingErrors(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.run([]step{
		{cmd("CLIENT", "TRACKING", "ON"), errReply("ERR Client tracking is currently not supported for RESP2. Please use RESP3.")},
		{cmd("CLIENT", "TRACKING", "OFF"), "+OK\r\n"},
		{cmd("CLIENT", "GETREDIR"), ":-1\r\n"},
		{cmd("CLIENT", "TRACKINGINFO"), "*6\r\n" + bulkReply("flags") + "*1\r\n" + bulkReply("off") +
			bulkReply("redirect") + ":-1\r\n" + bulkReply("prefixes") + "*0\r\n"},
	})
	if got := c.do("HELLO", "3"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3: %q", got)
	}
	c.run([]step{
		{cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "7"), errReply("ERR CLIENT TRACKING REDIRECT is not supported by rlserver: switch the connection to RESP3 (HELLO 3), which receives its invalidations itself")},
		{cmd("CLIENT", "TRACKING", "ON", "BCAST"), errReply("ERR CLIENT TRACKING BCAST and PREFIX are not supported by rlserver: invalidations are sent for the keys the connection reads")},
		{cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "rl:"), errReply("ERR CLIENT TRACKING BCAST and PREFIX are not supported by rlserver: invalidations are sent for the keys the connection reads")},
		{cmd("CLIENT", "TRACKING", "ON", "PREFIX", "rl:"), errReply("ERR PREFIX option requires BCAST mode to be enabled")},
		{cmd("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"), errReply("ERR You can't specify both OPTIN mode and OPTOUT mode")},
		{cmd("CLIENT", "TRACKING", "ON", "FAST"), errReply("ERR syntax error")},
		{cmd("CLIENT", "TRACKING", "ON", "REDIRECT"), errReply("ERR syntax error")},
		{cmd("CLIENT", "TRACKING", "MAYBE"), errReply("ERR syntax error")},
		{cmd("CLIENT", "CACHING", "YES"), errReply("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")},
		{cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n"},
		{cmd("CLIENT", "CACHING", "YES"), errReply("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")},
		{cmd("CLIENT", "CACHING", "NO"), errReply("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")},
		{cmd("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n"},
		{cmd("CLIENT", "CACHING", "MAYBE"), errReply("ERR syntax error")},
		{cmd("CLIENT", "CACHING"), errReply("ERR wrong number of arguments for 'client|caching' command")},
		{cmd("CLIENT", "TRACKING", "ON", "OPTOUT"), errReply("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")},
		{cmd("CLIENT", "TRACKING", "OFF"), "+OK\r\n"},
		{cmd("CLIENT", "TRACKING", "ON", "OPTOUT"), "+OK\r\n"},
	})
}

// A connection that switched back to RESP2 cannot take pushes: they are
// dropped, as Redis drops them.
func TestTrackingDropsPushesToRESP2(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t)
	b := s.dial(t)
	a.expect("_\r\n", "GET", "k")
	if got := a.do("HELLO", "2"); !strings.HasPrefix(got, "*14\r\n") {
		t.Fatalf("HELLO 2: %q", got)
	}
	b.expect("+OK\r\n", "SET", "k", "v")
	a.expectQuiet()
}

// The table remembers at most TrackingMaxKeys keys: the read that would
// pass the bound first invalidates everything, for every tracking
// connection, with the null push, after its own reply.
func TestTrackingTableBound(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.TrackingMaxKeys = 2 }))
	a := s.tracking(t)
	other := s.tracking(t)
	b := s.dial(t)
	a.expect("_\r\n", "GET", "k1")
	other.expect("_\r\n", "GET", "k2")
	if info := b.do("INFO", "stats"); !strings.Contains(info, "tracking_total_keys:2\r\n") || !strings.Contains(info, "tracking_total_items:2\r\n") {
		t.Fatalf("INFO stats: %q", info)
	}
	a.expect("_\r\n", "GET", "k3")
	if got := a.read(); got != nullInvalidationWire {
		t.Fatalf("A, past the bound: %q, want the null invalidation", got)
	}
	if got := other.read(); got != nullInvalidationWire {
		t.Fatalf("the other connection, past the bound: %q, want the null invalidation", got)
	}
	// k3 was remembered after the flush; k1 and k2 were forgotten.
	b.expect("+OK\r\n", "SET", "k1", "v")
	b.expect("+OK\r\n", "SET", "k2", "v")
	b.expect("+OK\r\n", "SET", "k3", "v")
	if got := a.read(); got != invalidation("k3") {
		t.Fatalf("A got %q, want k3 invalidated", got)
	}
	a.expectQuiet()
	other.expectQuiet()
}

// A connection that does not read its invalidations gets, past the bound of
// its queue, one null invalidation instead of the rest.
func TestTrackingQueueOverflowBecomesANullInvalidation(t *testing.T) {
	tr := &tracker{wake: make(chan struct{}, 1)}
	key := []byte(strings.Repeat("k", 1000))
	pushes := 0
	for !strings.HasPrefix(string(tr.pending), string(nullInvalidation)) {
		if pushes++; pushes > maxPendingPushes/len(key)+1 {
			t.Fatalf("%d bytes queued and no null invalidation", len(tr.pending))
		}
		tr.pushKey(key)
	}
	if pushes < maxPendingPushes/(len(key)+40) || string(tr.pending) != string(nullInvalidation) {
		t.Fatalf("after %d invalidations %q queued, want the null invalidation alone, past %d bytes", pushes, tr.pending[:min(50, len(tr.pending))], maxPendingPushes)
	}
	tr.pushKey([]byte("k"))
	if string(tr.pending) != string(nullInvalidation)+invalidation("k") {
		t.Fatalf("queued %q", tr.pending)
	}
	tr.pushNull()
	tr.pushNull()
	if string(tr.pending) != string(nullInvalidation) {
		t.Fatalf("two null invalidations queued as %q, want one", tr.pending)
	}
}

// Keys of shards whose writes this node does not hear of (a cluster node
// without a replica of them) cannot be tracked: their invalidation follows
// the reply at once, so the client does not keep them.
func TestTrackingUnobservedShardsInvalidateAtOnce(t *testing.T) {
	s := startServer(t, withReplicas())
	a := s.tracking(t)
	a.expect("_\r\n", "GET", "k")
	if got := a.read(); got != invalidation("k") {
		t.Fatalf("after the reply: %q, want k invalidated", got)
	}
	a.expect(intReply(0), "EXISTS", "k", "j")
	if got := a.read() + a.read(); got != invalidation("k")+invalidation("j") {
		t.Fatalf("after the reply: %q, want k and j invalidated", got)
	}
	a.expectQuiet()
}

// Pushes go between replies, never inside one: a connection pipelining
// reads of a key that another connection keeps writing reads well-formed
// replies, in order, with invalidations between them.
func TestTrackingPushesNeverSplitAReply(t *testing.T) {
	s := startServer(t)
	a := s.tracking(t)
	b := s.dial(t)
	b.expect("+OK\r\n", "SET", "k", strings.Repeat("v", 3000))
	done := make(chan struct{})
	writes := make(chan int, 1)
	go func() { // the writer: a connection of its own, answered in turn
		n := 0
		defer func() { writes <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			b.send("SET", "k", strings.Repeat("w", 3000))
			if b.read() != "+OK\r\n" {
				return
			}
			n++
		}
	}()
	var batch strings.Builder
	for i := range 50 {
		batch.WriteString(encode("GET", "k"))
		if i == 49 {
			batch.WriteString(encode("PING", "end"))
		}
	}
	pushes := 0
	for range 100 {
		a.write(batch.String())
		for replies := 0; replies < 51; {
			got := a.read()
			switch {
			case strings.HasPrefix(got, ">"):
				if got != invalidation("k") {
					t.Fatalf("push %q", got)
				}
				pushes++
			case replies < 50 && (got == bulkReply(strings.Repeat("v", 3000)) || got == bulkReply(strings.Repeat("w", 3000))):
				replies++
			case replies == 50 && got == bulkReply("end"):
				replies++
			default:
				t.Fatalf("reply %d of the pipeline: %.80q", replies, got)
			}
		}
	}
	close(done)
	if n := <-writes; n == 0 || pushes == 0 {
		t.Fatalf("%d writes, %d invalidations: the test proved nothing", n, pushes)
	}
}
