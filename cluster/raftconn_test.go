//go:build unix

package cluster

import (
	"io"
	"net"
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
