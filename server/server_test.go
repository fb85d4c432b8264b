package server

import (
	"net"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
)

// TestMaxClients checks that the connection past --maxclients is refused
// with Redis's text, and that a freed place can be taken again.
func TestMaxClients(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.MaxClients = 2 }))
	first, second := s.dial(t), s.dial(t)
	first.expect("+PONG\r\n", "PING")
	second.expect("+PONG\r\n", "PING")

	third := s.dial(t)
	if got := third.read(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third connection: %q", got)
	}
	third.expectClosed()
	first.expect("+PONG\r\n", "PING")

	first.conn.Close()
	poll.Until(t, ioTimeout, "the server to forget a closed connection", func() (bool, error) { return s.clientCount() == 1, nil })
	fourth := s.dial(t)
	fourth.expect("+PONG\r\n", "PING")
	if got := fourth.do("INFO", "stats"); !contains(got, "rejected_connections:1\r\n") {
		t.Fatalf("INFO stats: %q", got)
	}
}

// TestCloseRightAfterServe checks that Close stops a server whose Serve has
// only just been called, however the two goroutines interleave: Serve
// returns and the port is released.
func TestCloseRightAfterServe(t *testing.T) {
	clock := &cluster.DebugClock{}
	shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer shards.Close()
	cfg := testConfig()
	cfg.Clock, cfg.Shutdown = clock, time.Second
	for range 200 {
		srv, err := New(cfg, shards)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		srv.Close()
		select {
		case <-served:
		case <-time.After(ioTimeout):
			ln.Close()
			t.Fatal("Serve did not return after Close")
		}
		if conn, err := net.DialTimeout("tcp", ln.Addr().String(), ioTimeout); err == nil {
			conn.Close()
			t.Fatal("the listener still accepts after Serve returned")
		}
	}
}

// TestServeAfterClose checks that a closed server does not serve again.
func TestServeAfterClose(t *testing.T) {
	clock := &cluster.DebugClock{}
	shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer shards.Close()
	cfg := testConfig()
	cfg.Clock = clock
	srv, err := New(cfg, shards)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close before Serve: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := srv.Serve(ln); err == nil {
		t.Fatal("Serve after Close returned nil")
	}
	if a := srv.listenerAddr(false); a != nil {
		t.Fatalf("a listener after a refused Serve: %v", a)
	}
}

// TestCloseDisconnectsClients checks that Close ends open connections and
// returns once their handlers are done.
func TestCloseDisconnectsClients(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect("+PONG\r\n", "PING")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if n := s.clientCount(); n != 0 {
		t.Fatalf("%d clients left after Close", n)
	}
}
