//go:build linux

package server

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
)

// loopSockOf is the loop socket under the server's only connection, and
// whether the loop still serves it (it was not handed to a goroutine).
func loopSockOf(t *testing.T, s *testServer) (ls *loopSock, onLoop bool) {
	t.Helper()
	s.eachClient(func(c *conn) {
		if l, ok := c.drain.Conn.(*loopSock); ok {
			ls, onLoop = l, l.goConn() == nil
		}
	})
	if ls == nil {
		t.Fatal("the connection is not on an event loop")
	}
	return ls, onLoop
}

// unreadableEchoes is how many ECHOs unreadablePipeline sends.
const unreadableEchoes = 4000

// unreadablePipeline is a pipeline of ECHOs whose 16 MB of replies are more
// than the two sockets hold (the client's receive buffer and the server's
// send buffer grow to a few MB each), and the argument each ECHO returns.
func unreadablePipeline() (pipeline []byte, arg string) {
	arg = strings.Repeat("x", 4000)
	for range unreadableEchoes {
		pipeline = append(pipeline, encode("ECHO", arg)...)
	}
	return pipeline, arg
}

// A client that sends a long pipeline and reads none of its replies fills
// its socket: the loop must not wait for it (every other connection of the
// loop would wait too). The connection goes to a goroutine of its own, which
// writes the rest when the client reads; meanwhile another connection is
// answered, and afterwards the slow one gets every reply in order and goes
// on.
func TestEventLoopHandsASlowReaderToAGoroutine(t *testing.T) {
	s := startServer(t)
	slow := s.dial(t)
	slow.expect("+PONG\r\n", "PING")
	if _, onLoop := loopSockOf(t, s); !onLoop {
		t.Fatal("a new connection is not served by the loop")
	}
	pipeline, arg := unreadablePipeline()
	go slow.conn.Write(pipeline) // it waits once the server stops reading
	poll.Until(t, ioTimeout, "the slow reader to get a goroutine", func() (bool, error) {
		_, onLoop := loopSockOf(t, s)
		return !onLoop, nil
	})

	other := s.dial(t)
	other.expect("+PONG\r\n", "PING") // the loop is free

	for i := range unreadableEchoes {
		if got := slow.read(); got != bulkReply(arg) {
			t.Fatalf("reply %d: %.40q", i, got)
		}
	}
	slow.expect("+PONG\r\n", "PING")
	slow.expect(":0\r\n", "EXISTS", "k")
}

// A connection the loop serves when Close comes, idle but with replies its
// client has not read yet, is closed lingering (drain.go): FIN after the
// replies, then what the client still sends is discarded until it closes.
// Closed outright, a socket with unread bytes sends a reset, which throws
// the queued replies away.
func TestEventLoopShutdownDeliversQueuedReplies(t *testing.T) {
	s := startServer(t)
	// The client's receive buffer is small, so most of the replies stay
	// queued in the server's socket, whose send buffer is large enough to
	// take them all: the loop writes them without waiting.
	d := net.Dialer{Timeout: ioTimeout, Control: smallReceiveBuffer}
	client, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	want := []byte("+PONG\r\n")
	var ls *loopSock
	poll.Until(t, ioTimeout, "the connection on the loop", func() (bool, error) {
		if s.clientCount() == 0 {
			return false, nil
		}
		ls, _ = loopSockOf(t, s)
		return true, nil
	})
	raw, _ := ls.SyscallConn()
	raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 8<<20) })

	const n, size = 256, 4000 // 1 MB of replies
	arg := strings.Repeat("x", size)
	var pipeline strings.Builder
	for range n {
		pipeline.WriteString(encode("ECHO", arg))
		want = append(want, bulkReply(arg)...)
	}
	if _, err := client.Write([]byte(pipeline.String())); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, ioTimeout, "the replies to wait in the server's socket, the loop idle", func() (bool, error) {
		if _, onLoop := loopSockOf(t, s); !onLoop {
			return false, errors.New("the replies did not fit the server's socket: the connection left the loop")
		}
		queued, err := socketQueue(ls, unix.SIOCOUTQ)
		return s.stats.commands.Load() == n+1 && ls.c.drain.state.Load() == connIdle && queued > len(want)/2, err
	})

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	poll.Until(t, ioTimeout, "the shutdown to begin", func() (bool, error) {
		return ls.c.drain.state.Load() != connIdle, nil
	})
	// What the client sends once the shutdown began is never run: the
	// lingering close reads and drops it.
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	readAllReplies(t, client, want)
	client.Close()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c := s.clientCount(); c != 0 {
		t.Fatalf("%d connections left after Close", c)
	}
}

// CLIENT TRACKING gives the connection a goroutine (its pushes are written
// by another one, and may wait for the client): the invalidation of a key it
// read still arrives, after the reply that read it.
func TestEventLoopHandsTrackingToAGoroutine(t *testing.T) {
	s := startServer(t)
	reader := s.tracking(t)
	// The loop hands the connection over once the reply is written.
	poll.Until(t, ioTimeout, "the tracking connection to get a goroutine", func() (bool, error) {
		_, onLoop := loopSockOf(t, s)
		return !onLoop, nil
	})
	writer := s.dial(t)
	if info := writer.do("INFO", "clients"); !strings.Contains(info, "connected_clients:2\r\n") || !strings.Contains(info, "event_loops:1\r\n") || !strings.Contains(info, "event_loop_clients:1\r\n") {
		t.Fatalf("INFO clients with one connection on the loop and one on a goroutine:\n%s", info)
	}
	writer.expect("+OK\r\n", "SET", "k", "v1")
	reader.expect(bulkReply("v1"), "GET", "k")
	writer.expect("+OK\r\n", "SET", "k", "v2")
	if got := reader.read(); got != invalidation("k") {
		t.Fatalf("push %q, want Redis's invalidate push for k", got)
	}
}

// New refuses a negative number of event loops.
func TestEventLoopsCannotBeNegative(t *testing.T) {
	mem, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 1, Clock: cluster.SystemClock{}})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	cfg := testConfig()
	cfg.EventLoops = -1
	if _, err := New(cfg, mem); !errors.Is(err, errInvalidConfig) {
		t.Fatalf("New with -1 event loops: %v, want errInvalidConfig", err)
	}
}

// When a connection cannot be handed to a goroutine (Go's poller gets no
// descriptor: the process is out of files), that connection ends, and only
// it: the loop goes on serving the others, and the connection is forgotten
// (connected_clients, event_loop_clients).
func TestEventLoopHandOverFailureEndsOnlyThatConnection(t *testing.T) {
	t.Cleanup(func() { fileConn = net.FileConn }) // after the server's own cleanup
	var tried atomic.Int32
	fileConn = func(*os.File) (net.Conn, error) { tried.Add(1); return nil, syscall.EMFILE }
	s := startServer(t)
	slow := s.dial(t)
	slow.expect("+PONG\r\n", "PING")
	other := s.dial(t)
	other.expect("+PONG\r\n", "PING")

	// None of its replies read: the loop would hand the connection over.
	pipeline, arg := unreadablePipeline()
	go slow.conn.Write(pipeline) // it fails once the server closes
	poll.Until(t, ioTimeout, "the connection that could not be handed over to be gone", func() (bool, error) {
		st := s.Stats()
		return st.ConnectedClients == 1 && st.EventLoopClients == 1, nil
	})
	if tried.Load() != 1 {
		t.Fatalf("%d hand-overs tried, want 1", tried.Load())
	}
	other.expect("+PONG\r\n", "PING")
	other.expect(":0\r\n", "EXISTS", "k")

	// The slow client gets some of its replies, in order, then the end.
	for i := 0; ; i++ {
		var b strings.Builder
		if err := readValue(slow.r, &b); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("after %d replies the connection is still open", i)
			}
			break
		}
		if b.String() != bulkReply(arg) {
			t.Fatalf("reply %d: %.40q", i, b.String())
		}
	}
}
