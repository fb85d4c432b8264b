package server

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/script"
)

// replyCase is one engine result as a client's command gets it.
type replyCase struct {
	name string
	r    engine.Result
}

// replyCases are the results the reply writers encode most: a decision,
// an integer, a bulk string, an error, and the replies of several values
// (HMGET of four fields, LRANGE of ten elements, and go-redis/redis_rate's
// script, an array of two integers and two strings), each made by a shard
// as a command makes it.
func replyCases(b *testing.B) []replyCase {
	body, err := os.ReadFile("../script/testdata/redis_rate.lua")
	if err != nil {
		b.Fatal(err)
	}
	s := engine.NewShard()
	s.SetScripts(script.New(script.Config{ErrorText: ErrorText}))
	apply := func(args ...string) engine.Result {
		words := make([][]byte, len(args))
		for i, a := range args {
			words[i] = []byte(a)
		}
		var cmds []engine.Command
		switch spec := commands.Lookup(words[0]); {
		case strings.EqualFold(args[0], "script"):
			cmds = []engine.Command{{Op: engine.OpScriptLoad, Value: words[2]}}
		default:
			if cmds, err = spec.Parse(words, nil); err != nil {
				b.Fatalf("%q: %v", args, err)
			}
		}
		out := make([]engine.Result, len(cmds))
		s.Apply(1_700_000_000_000, cmds, out)
		return out[len(out)-1]
	}
	apply("SET", "s", "a value of some length")
	apply("HSET", "h", "f1", "value-1", "f2", "value-2", "f3", "value-3", "f4", "value-4")
	for i := range 10 {
		apply("RPUSH", "l", fmt.Sprint("element-", i))
	}
	sha := apply("SCRIPT", "LOAD", string(body)).Text
	return []replyCase{
		{"decision", apply("RL.SLIDING", "user:1", "100", "60000")},
		{"int", apply("INCR", "n")},
		{"bulk", apply("GET", "s")},
		{"error", apply("INCR", "h")},
		{"hmget", apply("HMGET", "h", "f1", "f2", "f3", "f4")},
		{"lrange", apply("LRANGE", "l", "0", "-1")},
		{"evalsha", apply("EVALSHA", sha, "1", "rate:1", "10", "10", "1", "1")},
	}
}

// BenchmarkReplies encodes one engine result as a connection's pipeline
// does, in RESP2 and RESP3: what the reply writers cost a command.
func BenchmarkReplies(b *testing.B) {
	for _, c := range replyCases(b) {
		for _, resp3 := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/resp%d", c.name, map[bool]int{false: 2, true: 3}[resp3]), func(b *testing.B) {
				r := c.r
				out := appendResult(nil, &r, resp3)
				b.SetBytes(int64(len(out)))
				b.ReportAllocs()
				for b.Loop() {
					out = appendResult(out[:0], &r, resp3)
				}
			})
		}
	}
}

// BenchmarkPipeline answers a pipeline of 64 commands (the decisions,
// CL.THROTTLE and EXISTS of TestPipelineAllocations) from its bytes to its
// replies, through memory shards: a connection's whole path but the socket.
func BenchmarkPipeline(b *testing.B) {
	s := startServer(b, withShards(4))
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
	a, p := net.Pipe()
	defer a.Close()
	defer p.Close()
	c := newConn(s.Server, wrappedConn{Conn: a})
	for _, resp3 := range []bool{false, true} {
		b.Run(fmt.Sprintf("resp%d", map[bool]int{false: 2, true: 3}[resp3]), func(b *testing.B) {
			c.resp3.Store(resp3)
			var out []byte
			b.ReportAllocs()
			for b.Loop() {
				rest, reply, ok := c.answer(in, out[:0])
				if !ok || len(rest) != 0 {
					b.Fatalf("answer: ok %v, %d bytes left", ok, len(rest))
				}
				out = reply
			}
		})
	}
}

// BenchmarkCollectionPath is HMGET of four fields and LRANGE of ten
// elements from the shard's apply to the encoded reply, in RESP2 and
// RESP3: what the engine does to make a reply of several values and what
// the server does to write it, together.
func BenchmarkCollectionPath(b *testing.B) {
	s := engine.NewShard()
	words := func(args ...string) [][]byte {
		w := make([][]byte, len(args))
		for i, a := range args {
			w[i] = []byte(a)
		}
		return w
	}
	parse := func(args ...string) []engine.Command {
		w := words(args...)
		cmds, err := commands.Lookup(w[0]).Parse(w, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cmds
	}
	out := make([]engine.Result, 1)
	s.Apply(1_700_000_000_000, parse("HSET", "h", "f1", "value-1", "f2", "value-2", "f3", "value-3", "f4", "value-4"), out)
	for i := range 10 {
		s.Apply(1_700_000_000_000, parse("RPUSH", "l", fmt.Sprint("element-", i)), out)
	}
	for _, c := range []struct {
		name string
		cmds []engine.Command
	}{
		{"hmget", parse("HMGET", "h", "f1", "f2", "f3", "f4")},
		{"lrange", parse("LRANGE", "l", "0", "-1")},
	} {
		for _, resp3 := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/resp%d", c.name, map[bool]int{false: 2, true: 3}[resp3]), func(b *testing.B) {
				var buf []byte
				b.ReportAllocs()
				for b.Loop() {
					s.Apply(1_700_000_000_000, c.cmds, out)
					buf = appendResult(buf[:0], &out[0], resp3)
				}
			})
		}
	}
}
