//go:build linux

package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlserver/rlserver/internal/poll"
)

// A connection shut while idle — its replies written, its loop back in Read —
// may still hold those replies in its socket when the client reads slowly,
// and the client may already have sent its next pipeline, unread. Closing
// such a socket outright sends a reset, and the reset throws the queued
// replies away: decisions taken whose answers never arrive. The shutdown
// must deliver every byte written before it.
func TestShutdownOfAnIdleConnectionDeliversQueuedReplies(t *testing.T) {
	// The client's receive buffer is small, so most of the replies stay
	// queued in the server's socket.
	client, sock := tcpPair(t, net.Dialer{Control: smallReceiveBuffer})
	d := &drainConn{Conn: sock}

	replies := bytes.Repeat([]byte(":1\r\n"), 16<<10) // 64 KiB, within the default send buffer
	sock.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.Write(replies); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the client's next pipeline to wait unread in the server's socket", func() (bool, error) {
		return unread(t, sock) > 0, nil
	})

	// The connection's loop, waiting for its next pipeline when Close comes
	// (or, scheduled first, reading it: then it is busy when Close comes,
	// and closes at its next Read).
	loopDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := d.Read(buf); err != nil {
				loopDone <- err
				return
			}
		}
	}()
	d.shutdown()

	readAllReplies(t, client, replies)
	client.Close()
	select {
	case err := <-loopDone:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("the loop's Read returned %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loop's Read did not return after the shutdown")
	}
}

// An idle connection whose replies have all arrived closes at once: a pool
// of idle clients that never read their FIN must not hold the shutdown up
// for the lingering timeout.
func TestShutdownOfAnIdleConnectionWithNothingQueuedClosesAtOnce(t *testing.T) {
	_, sock := tcpPair(t, net.Dialer{})
	d := &drainConn{Conn: sock}
	loopDone := make(chan error, 1)
	go func() {
		_, err := d.Read(make([]byte, 64))
		loopDone <- err
	}()
	start := time.Now()
	d.shutdown()
	select {
	case <-loopDone:
	case <-time.After(lingerTimeout / 2):
		t.Fatalf("an idle connection with nothing queued was still open %v after the shutdown", lingerTimeout/2)
	}
	t.Logf("closed in %v", time.Since(start))
}

// tcpPair returns both ends of a loopback TCP connection, the client's
// dialled with dialer; the test's cleanup closes them.
func tcpPair(t *testing.T, dialer net.Dialer) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = dialer.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// unread is how many bytes wait in sock's receive queue.
func unread(t *testing.T, sock net.Conn) int {
	n, err := socketQueue(sock, unix.SIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// smallReceiveBuffer is a dialer's Control that gives the client a receive
// buffer of 4 KiB, so that most of what the server writes stays queued in
// the server's socket.
func smallReceiveBuffer(_, _ string, rc syscall.RawConn) error {
	return rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
}

// readAllReplies reads what client receives until the server closes, and
// checks it is want: every reply, then EOF (not a reset).
func readAllReplies(t *testing.T, client net.Conn, want []byte) {
	t.Helper()
	client.SetReadDeadline(time.Now().Add(ioTimeout))
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatalf("after %d of %d bytes of replies: %v", len(got), len(want), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received %d bytes, want the %d bytes of the replies alone", len(got), len(want))
	}
}
