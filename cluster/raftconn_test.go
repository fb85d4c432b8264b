//go:build unix

package cluster

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// A Raft connection that its peer closed while it sat idle (the peer
// restarted) is replaced before the next request is written into it: the
// request reaches the peer's new connection instead of failing.
func TestRaftConnReplacesAConnectionThePeerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
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
		buf := make([]byte, 5)
		if _, err := io.ReadFull(second, buf); err == nil {
			got <- string(buf)
		}
	}()
	dial := func() (net.Conn, error) { return net.DialTimeout("tcp", ln.Addr().String(), time.Second) }
	conn, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	rc := newRaftConn(conn, dial)
	defer rc.Close()
	poll.Until(t, 5*time.Second, "the peer to close the first connection", func() (bool, error) {
		return !stillOpen(conn), nil
	})
	rc.lastUse.Store(0) // it sat idle in the pool
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
// ends the read at it instead of holding the replication for good.
func TestRaftConnKeepsTheDeadlineOnAFreshConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hold := make(chan struct{})
	defer close(hold)
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
		<-hold // reads the request, never answers
	}()
	dial := func() (net.Conn, error) { return net.DialTimeout("tcp", ln.Addr().String(), time.Second) }
	conn, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	rc := newRaftConn(conn, dial)
	defer rc.Close()
	poll.Until(t, 5*time.Second, "the peer to close the first connection", func() (bool, error) {
		return !stillOpen(conn), nil
	})
	rc.lastUse.Store(0) // it sat idle in the pool
	if err := rc.SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Write([]byte("hello")); err != nil {
		t.Fatalf("write: %v", err)
	}
	if rc.current() == conn {
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
