//go:build unix

package raftfix

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/internal/peek"
	"github.com/rlserver/rlserver/internal/poll"
)

// restartedPeer is a peer that closes the first connection it accepts (it
// restarted) and hands the second to serve, and a raftConn on that first
// connection once it looks closed, as a pooled connection that sat idle.
func restartedPeer(t *testing.T, serve func(second net.Conn)) (rc *raftConn, first net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		first, err := ln.Accept()
		if err != nil {
			return
		}
		first.Close() // the peer restarts
		second, err := ln.Accept()
		if err != nil {
			return
		}
		defer second.Close()
		serve(second)
	}()
	dial := func() (net.Conn, error) { return net.DialTimeout("tcp", ln.Addr().String(), time.Second) }
	conn, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	rc = newRaftConn(conn, dial)
	t.Cleanup(func() { rc.Close() })
	poll.Until(t, 5*time.Second, "the peer to close the first connection", func() (bool, error) {
		return !peek.StillOpen(conn), nil
	})
	rc.lastUse.Store(0) // it sat idle in the pool
	return rc, conn
}

// A Raft connection that its peer closed while it sat idle (the peer
// restarted) is replaced before the next request is written into it: the
// request reaches the peer's new connection instead of failing.
func TestRaftConnReplacesAConnectionThePeerClosed(t *testing.T) {
	got := make(chan string, 1)
	rc, _ := restartedPeer(t, func(second net.Conn) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(second, buf); err == nil {
			got <- string(buf)
		}
	})
	if _, err := rc.Write([]byte("hello")); err != nil {
		t.Fatalf("write: %v", err)
	}
	select {
	case s := <-got:
		if s != "hello" {
			t.Fatalf("the peer read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request never reached the peer's new connection")
	}
}

// The transport sets a request's deadline before it writes the request, so
// before the write that may replace the connection: the fresh connection
// keeps that deadline, and an answer that never comes (the peer stopped)
// ends the read at it, rather than when the peer answers or the
// connection breaks.
func TestRaftConnKeepsTheDeadlineOnAFreshConnection(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	rc, first := restartedPeer(t, func(net.Conn) { <-hold }) // reads nothing, never answers
	if err := rc.SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Write([]byte("hello")); err != nil {
		t.Fatalf("write: %v", err)
	}
	if rc.current() == first {
		t.Fatal("the connection the peer closed was not replaced")
	}
	read := make(chan error, 1)
	go func() {
		_, err := rc.Read(make([]byte, 1))
		read <- err
	}()
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the read on the fresh connection ended with %v, want the deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read on the fresh connection outlived the deadline set before the write")
	}
	// A deadline cleared before the write is cleared on the fresh connection too.
	if err := rc.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := deadline(rc.readDeadline.Load()); !got.IsZero() {
		t.Errorf("a cleared deadline is kept as %v", got)
	}
}

// Canary for staleCheckedStream (raftConn). hashicorp/raft's
// NetworkTransport takes a pooled connection for a request without looking
// at it (net_transport.go, getConn: getPooledConn), so a request on a
// connection the peer closed while it sat idle (the peer restarted) fails:
// the request is written, and its answer is end-of-file. The request after
// it dials afresh and succeeds: one failure for each stale connection in
// the pool, which for an election is a lost vote and a whole election
// timeout to wait.
func TestCanaryPooledConnectionThePeerClosedFailsARequest(t *testing.T) {
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	peer := &recordingStream{Listener: listen()}
	server := raft.NewNetworkTransport(peer, 2, 5*time.Second, io.Discard)
	defer server.Close()
	go func() {
		for rpc := range server.Consumer() {
			rpc.Respond(&raft.RequestVoteResponse{Term: 2, Granted: true}, nil)
		}
	}()
	ours := &recordingStream{Listener: listen()}
	client := raft.NewNetworkTransport(ours, 2, 5*time.Second, io.Discard)
	defer client.Close()
	vote := func() error {
		var resp raft.RequestVoteResponse
		return client.RequestVote("n2", server.LocalAddr(), &raft.RequestVoteRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n1"), Addr: []byte("n1")}, Term: 2,
		}, &resp)
	}
	if err := vote(); err != nil {
		t.Fatal(err)
	}
	// The connection is back in the pool. The peer restarts: it closes its
	// end.
	peer.closeAll()
	pooled := ours.only(t)
	poll.Until(t, 5*time.Second, "the pooled connection to see its peer close", func() (bool, error) {
		return !peek.StillOpen(pooled), nil
	})
	if err := vote(); err == nil {
		t.Fatal("a request on the pooled connection the peer closed succeeded: hashicorp/raft's NetworkTransport now checks (or retries) a pooled connection before a request: staleCheckedStream (raftConn) may go")
	}
	if err := vote(); err != nil {
		t.Fatalf("the request after it, on a fresh connection: %v", err)
	}
}

// recordingStream is a TCP stream layer that keeps the connections it
// accepts and dials.
type recordingStream struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (s *recordingStream) keep(c net.Conn) {
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

func (s *recordingStream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err == nil {
		s.keep(c)
	}
	return c, err
}

func (s *recordingStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err == nil {
		s.keep(c)
	}
	return c, err
}

// closeAll closes every connection kept so far.
func (s *recordingStream) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// only is the one connection kept so far.
func (s *recordingStream) only(t *testing.T) net.Conn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 {
		t.Fatalf("%d connections, want the pooled one", len(s.conns))
	}
	return s.conns[0]
}
