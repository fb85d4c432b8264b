package server

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// TestPipelineAllocations measures what answering a pipeline of decisions
// allocates once warm: nothing. It hands a connection's answer loop the raw
// bytes of a pipeline, so everything is measured, from parsing (redcon's
// ReadNextCommand, in place) to the encoded replies: routing, batching per
// shard, the shard goroutines of the memory shards and the engine, in RESP2
// and RESP3.
func TestPipelineAllocations(t *testing.T) {
	checkPipelineAllocations(t, startServer(t, withShards(4)))
}

// While a connection tracks keys for client-side caching, the shards report
// every write to the tracking table: for a write to a key nobody read, that
// still allocates nothing.
func TestPipelineAllocationsWhileTracking(t *testing.T) {
	s := startServer(t, withShards(4))
	a := s.tracking(t)
	for _, k := range []string{"elsewhere", "user:x", "t:user:x"} {
		a.do("EXISTS", k)
	}
	checkPipelineAllocations(t, s)
	a.expectQuiet()
}

// checkPipelineAllocations measures a pipeline of decisions on s.
func checkPipelineAllocations(t *testing.T, s *testServer) {
	t.Helper()
	var raw strings.Builder
	for i := range 64 {
		key := fmt.Sprintf("user:%d", i%16)
		switch i % 4 {
		case 0, 1:
			raw.WriteString(encode("RL.SLIDING", key, "1000000", "60000"))
		case 2:
			raw.WriteString(encode("CL.THROTTLE", "t:"+key, "1000000", "1", "1"))
		case 3:
			raw.WriteString(encode("EXISTS", key, "nokey"))
		}
	}
	in := []byte(raw.String())
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(s.Server, wrappedConn{Conn: a})
	var out []byte
	run := func() {
		rest, reply, ok := c.answer(in, out[:0])
		if !ok || len(rest) != 0 {
			t.Fatalf("answer: ok %v, %d bytes left", ok, len(rest))
		}
		out = reply
	}
	for _, resp3 := range []bool{false, true} {
		c.resp3.Store(resp3)
		for range 10 { // warm up: keys created, buffers grown
			run()
		}
		if n := strings.Count(string(out), "\r\n*5\r\n") + strings.Count(string(out), "%5\r\n"); n < 16 {
			t.Fatalf("resp3=%v: %d decisions in the replies %.100q", resp3, n, out)
		}
		if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
			t.Errorf("resp3=%v: %v allocations per pipeline of 64 commands, want 0", resp3, allocs)
		}
	}
}
