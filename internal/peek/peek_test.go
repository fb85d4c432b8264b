package peek

import (
	"net"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// An idle forwarding connection whose peer has gone must be told from a live
// one before a request is written into it.
func TestStillOpen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	live, _ := net.Dial("tcp", ln.Addr().String())
	defer live.Close()
	peer := <-accepted
	defer peer.Close()
	if !StillOpen(live) {
		t.Fatal("a live idle connection was taken for closed")
	}
	gone, _ := net.Dial("tcp", ln.Addr().String())
	defer gone.Close()
	(<-accepted).Close()
	// The FIN crosses loopback asynchronously.
	poll.Until(t, 5*time.Second, "a connection its peer closed to look closed", func() (bool, error) {
		return !StillOpen(gone), nil
	})
	if !StillOpen(live) {
		t.Fatal("checking changed a live connection")
	}
}
