package cluster

import (
	"errors"
	"net"
	"testing"
	"time"
)

// Control calls keep as many idle connections to a peer as were in use at
// once, up to controlPool, and take them again before they dial: calls made
// at the same moment do not each pay a new connection.
func TestControlCallsReuseTheirConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var peers []net.Conn
	defer func() {
		for _, c := range peers {
			c.Close()
		}
	}()
	dials := 0
	dial := func(addr string, timeout time.Duration) (net.Conn, error) {
		dials++
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err == nil {
			p, aerr := ln.Accept()
			if aerr != nil {
				return nil, aerr
			}
			peers = append(peers, p) // the peer keeps it open: it stays usable
		}
		return c, err
	}
	f := newControlCalls(newBusDialer(dial, ClusterID{}, nil))
	t.Cleanup(f.close)
	addr := ln.Addr().String()
	busy := func(n int) {
		t.Helper()
		var held []*peerConn
		for range n {
			c, err := f.get(addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			f.put(addr, c)
		}
	}
	busy(controlPool)
	if dials != controlPool {
		t.Fatalf("%d dials for %d connections in use at once", dials, controlPool)
	}
	busy(controlPool)
	if dials != controlPool {
		t.Fatalf("%d dials after the same load again, want none more than the first %d", dials, controlPool)
	}
	busy(controlPool + 3) // beyond the pool: three more dials, and three closed after use
	if dials != controlPool+3 || len(f.idle[addr]) != controlPool {
		t.Fatalf("%d dials, %d idle; want %d and %d", dials, len(f.idle[addr]), controlPool+3, controlPool)
	}
}

// A call whose deadline had passed before its frame was written sent
// nothing: it fails as not applied, which a caller may safely retry, not as
// a change that may have been committed.
func TestControlCallPastItsDeadlineIsNotApplied(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // open until the test ends: only the deadline fails the write
		}
	}()
	n := &RaftShards{control: newControlCalls(newBusDialer(tcpDial, ClusterID{}, nil))}
	t.Cleanup(n.control.close)
	past := time.Now().Add(-time.Second)
	if _, sent, err := n.control.call(ln.Addr().String(), []byte{frameCatalogue, 1}, past); err == nil || sent {
		t.Fatalf("call past its deadline: sent %v, err %v; want not sent, an error", sent, err)
	}
	if _, _, err := n.SendCatalogueOp(ln.Addr().String(), []byte{1}, past); !errors.Is(err, ErrNotApplied) {
		t.Fatalf("catalogue change past its deadline: %v, want ErrNotApplied", err)
	}
}
