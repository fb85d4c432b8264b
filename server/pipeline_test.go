package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// keyOnShard returns a key named prefix-<n> that the shard of that index
// owns, among shards.
func keyOnShard(t *testing.T, prefix string, shard, shards int) string {
	t.Helper()
	for n := 0; n < 10_000; n++ {
		k := fmt.Sprintf("%s-%d", prefix, n)
		if cluster.ShardOfSlot(cluster.Slot([]byte(k)), shards) == shard {
			return k
		}
	}
	t.Fatalf("no key for shard %d", shard)
	return ""
}

// TestPipelineRepliesInOrder sends one write mixing decisions on several
// shards, server commands, errors, a multi-shard DEL and a HELLO 3: the
// replies come strictly in request order, and HELLO changes the encoding
// of the replies after it only.
func TestPipelineRepliesInOrder(t *testing.T) {
	s := startServer(t)
	a, b, c := keyOnShard(t, "a", 0, 4), keyOnShard(t, "b", 1, 4), keyOnShard(t, "c", 3, 4)
	conn := s.dial(t)
	id := conn.clientID()
	steps := []step{
		{cmd("RL.SLIDING", a, "3", "1000"), decision2(1, 3, 2, 0, 2000)},
		{cmd("RL.SLIDING", b, "3", "1000"), decision2(1, 3, 2, 0, 2000)},
		{cmd("PING"), "+PONG\r\n"},
		{cmd("RL.SLIDING", a, "3", "1000"), decision2(1, 3, 1, 0, 2000)},
		{cmd("NOSUCH", "x"), "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
		{cmd("RL.SLIDING", c, "3", "1000", "COST", "1000000000000001"), fmt.Sprintf("-ERR cost must be an integer from %d to %d\r\n", -int64(engine.MaxCount), int64(engine.MaxCount))},
		{cmd("CL.THROTTLE", c, "0", "1", "1"), arrayReply(intReply(0), intReply(1), intReply(0), intReply(-1), intReply(1))},
		{cmd("EXISTS", a, b, c, "nokey"), intReply(3)},
		{cmd("DBSIZE"), intReply(3)},
		{cmd("HELLO", "3"), helloReply(true, id)},
		{cmd("RL.SLIDING", a, "3", "1000"), decision3(1, 3, 0, 0, 2000)},
		{cmd("CL.THROTTLE", c, "0", "1", "1"), arrayReply(intReply(1), intReply(1), intReply(0), intReply(1), intReply(1))},
		{cmd("RL.INFO", "nokey"), "_\r\n"},
		{cmd("DEL", a, b, c, "nokey"), intReply(3)},
		{cmd("TYPE", a), "+none\r\n"},
		{cmd("PTTL", b), intReply(-2)},
		{cmd("RL.SLIDING", b, "3", "1000"), decision3(1, 3, 2, 0, 2000)},
		{cmd("ECHO", "done"), bulkReply("done")},
	}
	conn.expectPipeline(steps)
}

// expectPipeline sends the steps' commands in one write and checks that
// their replies are the steps' wants, in order.
func (c *rawConn) expectPipeline(steps []step) {
	c.t.Helper()
	var req, want strings.Builder
	for _, st := range steps {
		req.WriteString(encode(st.args...))
		want.WriteString(st.want)
	}
	c.write(req.String())
	var got strings.Builder
	for range steps {
		got.WriteString(c.read())
	}
	if got.String() != want.String() {
		for i, st := range steps {
			c.t.Logf("%d %q -> want %q", i, st.args, st.want)
		}
		c.t.Fatalf("got  %q\nwant %q", got.String(), want.String())
	}
}

// TestPipelineLarge sends a thousand decisions on keys spread over every
// shard in one write and checks each reply against a model of the budgets.
func TestPipelineLarge(t *testing.T) {
	s := startServer(t, withShards(8))
	conn := s.dial(t)
	const n, keys, limit = 1000, 37, 50
	var req strings.Builder
	for i := range n {
		req.WriteString(encode("RL.FIXED", fmt.Sprintf("user:%d", i%keys), fmt.Sprint(limit), "60000"))
	}
	conn.write(req.String())
	used := map[int]int64{}
	reset := int64(60000 - testNow%60000) // fixed windows align to the epoch
	for i := range n {
		k := i % keys
		used[k]++
		allowed, remaining, retry := int64(1), limit-used[k], int64(0)
		if used[k] > limit {
			allowed, remaining, retry = 0, 0, reset
		}
		if got, want := conn.read(), decision2(allowed, limit, remaining, retry, reset); got != want {
			t.Fatalf("reply %d (key %d): got %q, want %q", i, k, got, want)
		}
	}
}

// TestPipelineAcrossWrites sends a pipeline cut at every few bytes, so
// commands arrive split over many reads.
func TestPipelineAcrossWrites(t *testing.T) {
	s := startServer(t)
	conn := s.dial(t)
	var req strings.Builder
	for i := range 20 {
		req.WriteString(encode("RL.SLIDING", "k", "100", "1000"))
		req.WriteString(fmt.Sprintf("ECHO %d\r\n", i))
	}
	raw := req.String()
	for i := 0; i < len(raw); i += 7 {
		conn.write(raw[i:min(i+7, len(raw))])
	}
	for i := range 20 {
		if got, want := conn.read(), decision2(1, 100, int64(99-i), 0, 2000); got != want {
			t.Fatalf("decision %d: got %q, want %q", i, got, want)
		}
		if got, want := conn.read(), bulkReply(fmt.Sprint(i)); got != want {
			t.Fatalf("echo %d: got %q, want %q", i, got, want)
		}
	}
}

// TestPipelineMemoryIsBounded sends a pipeline of a hundred thousand small
// commands, which redcon hands over at once after a large command has grown
// its buffer: the connection's batch may not grow with it, nor keep its
// memory afterwards.
func TestPipelineMemoryIsBounded(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) {
		c.Limits = Limits{MaxBulkLen: 1 << 20, MaxArgs: 64, MaxRequestLen: 4 << 20, MaxKeyLen: 128}
	}))
	rc := s.dial(t)
	var req strings.Builder
	req.WriteString(encode("ECHO", strings.Repeat("x", 1<<20)))
	const n = 100_000
	for range n {
		req.WriteString("EXISTS k\r\n")
	}
	rc.write(req.String())
	rc.read()
	for i := range n {
		if got := rc.read(); got != ":0\r\n" {
			t.Fatalf("reply %d: %q", i, got)
		}
	}
	s.eachClient(func(c *conn) {
		c.wmu.Lock() // a pipeline's batch is used under it
		defer c.wmu.Unlock()
		b := &c.batch
		results, cmds := 0, 0
		for _, r := range b.reqs {
			if r != nil { // a shard the connection sent nothing to
				results, cmds = results+cap(r.Results), cmds+cap(r.Cmds)
			}
		}
		if max(cap(b.replies), cap(b.shardOf), cap(b.posOf), cmds, results) > 2*maxSegment {
			t.Errorf("after %d commands the batch keeps room for %d replies, %d engine commands, %d results",
				n, cap(b.replies), cmds, results)
		}
	})
}

// A connection holds a request only for the shards it has sent commands
// to: with many shards and many idle connections, requests made ahead were
// most of the memory the collector scanned.
func TestBatchHoldsOnlyTheShardsUsed(t *testing.T) {
	var b batch
	if allocs := testing.AllocsPerRun(100, func() { b.init(64, time.Second) }); allocs != 1 {
		t.Errorf("a new connection's batch for 64 shards: %v allocations, want 1", allocs)
	}
	s := startServer(t, withShards(64))
	rc := s.dial(t)
	rc.write("PING\r\n")
	rc.read()
	held := func() (reqs int) {
		s.eachClient(func(c *conn) {
			c.wmu.Lock()
			defer c.wmu.Unlock()
			for _, r := range c.batch.reqs {
				if r != nil {
					reqs++
				}
			}
		})
		return reqs
	}
	if reqs := held(); reqs != 0 {
		t.Fatalf("after a PING the connection holds %d requests, want none", reqs)
	}
	rc.write(encode("RL.SLIDING", "user:ada", "10", "1000") + encode("RL.SLIDING", "user:ada", "10", "1000"))
	rc.read()
	rc.read()
	if reqs := held(); reqs != 1 {
		t.Fatalf("after two decisions on one key the connection holds %d requests, want 1", reqs)
	}
}
