package cluster

import (
	"net"
	"testing"
	"time"
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
	if !stillOpen(live) {
		t.Fatal("a live idle connection was taken for closed")
	}
	gone, _ := net.Dial("tcp", ln.Addr().String())
	defer gone.Close()
	(<-accepted).Close()
	deadline := time.Now().Add(5 * time.Second)
	for stillOpen(gone) {
		if time.Now().After(deadline) {
			t.Fatal("a connection its peer closed still looks open")
		}
		time.Sleep(time.Millisecond) // the FIN crosses loopback asynchronously
	}
	if !stillOpen(live) {
		t.Fatal("checking changed a live connection")
	}
}
