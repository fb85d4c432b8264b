package cluster

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Every Raft group gives the node's advertised bus address as its own, not
// the address its listener is bound to: nodes in containers all listen on
// 0.0.0.0 at the same port, and a Raft address taken from the listener
// made them one candidate to the voters, which voted twice in a term.
func TestRaftAddressIsTheAdvertisedBusAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const advertised = "rl-1.rl-headless:16380"
	b := newBus(ln, advertised, newBusDialer(tcpDial, ClusterID{}, nil), nil, slog.New(slog.DiscardHandler), nil)
	defer b.close()
	s := b.stream(0)
	defer s.Close()
	if got := s.Addr().String(); got != advertised {
		t.Fatalf("the group's stream gives %q (the listener is on %s), want the advertised %q", got, ln.Addr(), advertised)
	}
	trans := raft.NewNetworkTransport(s, 1, time.Second, io.Discard)
	if got := trans.LocalAddr(); got != advertised {
		t.Fatalf("Raft's transport gives %q as this node's address, want %q", got, advertised)
	}
}

// A Raft group's dial to a peer gives up on the connect after
// connectTimeout, not after the 10 s Raft's transport allows the whole
// exchange: a replaced pod's old address, which its name still resolves to
// for a while, would otherwise hold the leader's replication to the new pod
// for those 10 s.
func TestRaftDialConnectsWithinTheConnectTimeout(t *testing.T) {
	var asked time.Duration
	gone := errors.New("no route to the old address")
	dial := func(_ string, timeout time.Duration) (net.Conn, error) {
		asked = timeout
		return nil, gone
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := newBus(ln, ln.Addr().String(), newBusDialer(dial, ClusterID{}, nil), nil, slog.New(slog.DiscardHandler), nil)
	defer b.close()
	s := b.stream(0)
	defer s.Close()
	if _, err := s.Dial("rl-2.rl-headless:16380", 10*time.Second); !errors.Is(err, gone) {
		t.Fatalf("Dial: %v, want the dialer's error", err)
	}
	if asked != connectTimeout {
		t.Fatalf("the connect was given %v, want %v", asked, connectTimeout)
	}
}
