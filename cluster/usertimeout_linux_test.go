package cluster

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Both ends of a bus connection give up once what they sent goes
// unacknowledged for busUserTimeout: without it, a forwarding connection
// into a partition held every request written into it until the kernel's
// retransmissions, doubling in interval, reached the healed peer, up to 6 s
// after the heal in tests/partition_test.go, and those requests were
// applied then.
func TestBusConnectionsGiveUpOnUnacknowledgedData(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	serve := map[byte]func(net.Conn){streamControl: func(c net.Conn) { accepted <- c }}
	b := newBus(ln, ln.Addr().String(), newBusDialer(tcpDial, ClusterID{}, nil), nil, slog.New(slog.DiscardHandler), serve)
	defer b.close()
	go b.accept()
	dialed, err := b.dialer.open(ln.Addr().String(), streamControl, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	var served net.Conn
	select {
	case served = <-accepted:
		defer served.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the bus did not hand the connection over")
	}
	for end, conn := range map[string]net.Conn{"dialled": dialed, "accepted": served} {
		if got := userTimeout(t, conn); got != busUserTimeout {
			t.Errorf("the %s end's TCP_USER_TIMEOUT is %v, want %v", end, got, busUserTimeout)
		}
	}
}

// userTimeout reads conn's TCP_USER_TIMEOUT.
func userTimeout(t *testing.T, conn net.Conn) time.Duration {
	t.Helper()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ms int
	var serr error
	if err := raw.Control(func(fd uintptr) { ms, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return time.Duration(ms) * time.Millisecond
}
