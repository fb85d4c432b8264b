package server

import (
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

const wireNullArray = "*-1\r\n"

// TestWatch checks WATCH as Redis answers it: EXEC aborts with a null
// array when a watched key changed (through another connection), runs when
// none did, and every EXEC, DISCARD or UNWATCH forgets the keys. WATCH
// inside MULTI is refused without dooming the transaction; UNWATCH inside
// it is queued.
func TestWatch(t *testing.T) {
	for _, loops := range []bool{false, true} {
		var opts []option
		if loops {
			opts = append(opts, withLoops())
		}
		s := startServer(t, opts...)
		a, b := s.dial(t), s.dial(t)
		a.run([]step{
			{cmd("SET", "{w}k", "1"), "+OK\r\n"},
			{cmd("WATCH", "{w}k", "{w}absent"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("INCR", "{w}k"), wireQueued},
			{cmd("EXEC"), arrayReply(intReply(2))},
			{cmd("WATCH", "{w}k"), "+OK\r\n"},
		})
		b.run([]step{{cmd("INCR", "{w}k"), intReply(3)}})
		a.run([]step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("INCR", "{w}k"), wireQueued},
			{cmd("EXEC"), wireNullArray},
			{cmd("GET", "{w}k"), bulkReply("3")},
			// The EXEC forgot the key: a change now aborts nothing.
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("INCR", "{w}k"), wireQueued},
			{cmd("EXEC"), arrayReply(intReply(4))},
			{cmd("WATCH", "{w}absent"), "+OK\r\n"},
		})
		b.run([]step{{cmd("SET", "{w}absent", "now"), "+OK\r\n"}})
		a.run([]step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("WATCH", "{w}k"), "-ERR WATCH inside MULTI is not allowed\r\n"},
			{cmd("UNWATCH"), wireQueued},
			{cmd("EXEC"), wireNullArray},
			{cmd("WATCH", "{w}k"), "+OK\r\n"},
			{cmd("UNWATCH"), "+OK\r\n"},
		})
		b.run([]step{{cmd("DEL", "{w}k"), intReply(1)}})
		a.run([]step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("EXEC"), "*0\r\n"},
			{cmd("WATCH", "{w}k"), "+OK\r\n"},
			{cmd("DISCARD"), "-ERR DISCARD without MULTI\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("DISCARD"), "+OK\r\n"},
		})
		b.run([]step{{cmd("SET", "{w}k", "x"), "+OK\r\n"}})
		a.run([]step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("GET", "{w}k"), wireQueued},
			{cmd("EXEC"), arrayReply(bulkReply("x"))},
		})
	}
}

// TestWatchPipelinedAndSlots checks that EXEC's guards guard the
// transaction only, not the commands pipelined after it on the same shard,
// and that the watched keys and the transaction's share one slot.
func TestWatchPipelinedAndSlots(t *testing.T) {
	if cluster.Slot([]byte("a")) == cluster.Slot([]byte("b")) {
		t.Fatal("a and b share a slot")
	}
	for _, opts := range [][]option{nil, {withLoops()}} {
		s := startServer(t, opts...)
		a, b := s.dial(t), s.dial(t)
		a.run([]step{{cmd("WATCH", "a"), "+OK\r\n"}})
		b.run([]step{{cmd("SET", "a", "1"), "+OK\r\n"}})
		a.write(encode("MULTI") + encode("INCR", "a") + encode("EXEC") + encode("INCR", "a") + encode("GET", "a"))
		for _, want := range []string{"+OK\r\n", wireQueued, wireNullArray, intReply(2), bulkReply("2")} {
			if got := a.read(); got != want {
				t.Fatalf("pipelined: %q, want %q", got, want)
			}
		}
		// WATCH waits for its shard; what follows it in the pipeline waits for it.
		a.write(encode("WATCH", "a") + encode("MULTI") + encode("INCR", "a") + encode("EXEC") + encode("GET", "a"))
		for _, want := range []string{"+OK\r\n", "+OK\r\n", wireQueued, arrayReply(intReply(3)), bulkReply("3")} {
			if got := a.read(); got != want {
				t.Fatalf("pipelined after WATCH: %q, want %q", got, want)
			}
		}
	}
	s := startServer(t)
	a := s.dial(t)
	a.run([]step{
		{cmd("WATCH", "a", "b"), wireCrossSlot},
		{cmd("WATCH", "a"), "+OK\r\n"},
		{cmd("WATCH", "b"), wireCrossSlot},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("GET", "b"), wireCrossSlot},
		{cmd("EXEC"), wireExecAbort},
		// EXECABORT forgot the keys too.
		{cmd("WATCH", "b"), "+OK\r\n"},
		{cmd("UNWATCH"), "+OK\r\n"},
	})
}
