package server

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// fakeConn is the part of a redcon connection the server's handler uses:
// it hands over a prepared pipeline and keeps what the handler writes.
type fakeConn struct {
	redcon.Conn // nil: any other method panics
	ctx         any
	pipeline    []redcon.Command
	out         []byte
}

func (f *fakeConn) Context() any                   { return f.ctx }
func (f *fakeConn) SetContext(v any)               { f.ctx = v }
func (f *fakeConn) RemoteAddr() string             { return "127.0.0.1:1" }
func (f *fakeConn) ReadPipeline() []redcon.Command { return f.pipeline }
func (f *fakeConn) WriteRaw(b []byte)              { f.out = append(f.out, b...) }
func (f *fakeConn) NetConn() net.Conn              { return nil }

// TestPipelineAllocations measures what answering a pipeline of decisions
// allocates once warm: nothing. It drives Server.handle directly with
// commands already parsed, so redcon's reader (which allocates a copy of
// each command it reads) is left out; everything after it is measured,
// including the shard goroutines of the memory shards and the engine:
// routing, batching per shard, submitting, applying, encoding in RESP2 and
// RESP3, and the write.
func TestPipelineAllocations(t *testing.T) {
	s := startServer(t, withShards(4))
	var pipeline []redcon.Command
	for i := range 64 {
		key := fmt.Sprintf("user:%d", i%16)
		switch i % 4 {
		case 0, 1:
			pipeline = append(pipeline, command("RL.SLIDING", key, "1000000", "60000"))
		case 2:
			pipeline = append(pipeline, command("CL.THROTTLE", "t:"+key, "1000000", "1", "1"))
		case 3:
			pipeline = append(pipeline, command("EXISTS", key, "nokey"))
		}
	}
	fc := &fakeConn{pipeline: pipeline[1:]}
	if !s.accept(fc) {
		t.Fatal("the fake connection was refused")
	}
	defer s.closed(fc, nil)
	run := func() {
		fc.out = fc.out[:0]
		s.handle(fc, pipeline[0])
	}
	for _, resp3 := range []bool{false, true} {
		fc.ctx.(*client).resp3.Store(resp3)
		for range 10 { // warm up: keys created, buffers grown
			run()
		}
		if n := strings.Count(string(fc.out), "\r\n*5\r\n") + strings.Count(string(fc.out), "%5\r\n"); n < 16 {
			t.Fatalf("resp3=%v: %d decisions in the replies %.100q", resp3, n, fc.out)
		}
		if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
			t.Errorf("resp3=%v: %v allocations per pipeline of %d commands, want 0", resp3, allocs, len(pipeline))
		}
	}
}

// command is a parsed command as redcon hands it over.
func command(args ...string) redcon.Command {
	cmd := redcon.Command{Raw: []byte(encode(args...))}
	for _, a := range args {
		cmd.Args = append(cmd.Args, []byte(a))
	}
	return cmd
}
