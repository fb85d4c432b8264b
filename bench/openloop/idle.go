package main

import (
	"bufio"
	"fmt"
	"net"
	"time"
)

// idleConns are connections held open beside the measured ones, each with
// its reader for the PINGs that prove the server holds it.
type idleConns struct {
	ncs []net.Conn
	rs  []*bufio.Reader
}

// holdIdle opens n connections to addr and has each answer a PING, so that
// the server has accepted and registered every one before the run begins.
func holdIdle(addr string, n int) (*idleConns, error) {
	h := &idleConns{}
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return h, fmt.Errorf("idle connection %d of %d: %w", len(h.ncs)+1, n, err)
		}
		h.ncs = append(h.ncs, nc)
		h.rs = append(h.rs, bufio.NewReaderSize(nc, 64))
	}
	return h, h.check()
}

// check sends a PING on every idle connection, then reads every reply: the
// server still holds them all. A server that holds a connection without
// answering fails the check after half a minute rather than hanging the run.
func (h *idleConns) check() error {
	deadline := time.Now().Add(30 * time.Second)
	for i, nc := range h.ncs {
		nc.SetDeadline(deadline)
		if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return fmt.Errorf("idle connection %d: %w", i+1, err)
		}
	}
	for i, r := range h.rs {
		if err := readReply(r); err != nil {
			return fmt.Errorf("idle connection %d: %w", i+1, err)
		}
	}
	return nil
}

// close closes every idle connection.
func (h *idleConns) close() {
	for _, nc := range h.ncs {
		nc.Close()
	}
}
