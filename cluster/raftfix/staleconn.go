package raftfix

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rlserver/rlserver/internal/peek"
)

// hashicorp/raft's network transport keeps idle connections to each peer in
// a pool and takes one for each request it sends (a vote, a heartbeat, the
// start of a replication pipeline) without looking at it. When the peer has
// restarted since, the connection it takes is one the peer closed: the
// request fails with end-of-file, and an election lost that way waits a
// whole election timeout to try again. raftConn is the connection the
// transport is given (staleCheckedStream dials it): before a request on a
// connection that sat idle, it peeks at the socket, and opens a fresh one in
// its place if the peer closed it. A request is sent whole on one
// connection: it starts on a frame boundary, where the transport has read
// every answer it awaited.
//
// Upstream: no hashicorp/raft issue found (searched its issues for pooled
// or stale connections, and for EOF or reset on the first request after a
// peer restarted); rqlite/rqlite#2335, "Raft TCP mux re-using closed
// connection" (open), may be the same met by another user of the
// NetworkTransport. The code path is net_transport.go, getConn
// (getPooledConn hands out the last pooled connection unchecked) and
// genericRPC; unchanged in v1.8.0.
// Canary: TestCanaryPooledConnectionThePeerClosedFailsARequest.

// staleAfter is how long a connection sits idle before its next request
// checks it. A peer's heartbeats keep its busy connection younger than that.
const staleAfter = 100 * time.Millisecond

// raftConn is a Raft connection that replaces itself, before a request,
// when its peer closed it while it sat idle. The transport's replication
// pipeline reads from one goroutine while it writes from another, so the
// connection and the time of its last use are atomic.
type raftConn struct {
	conn    atomic.Pointer[net.Conn]
	lastUse atomic.Int64 // unix ns
	redial  func() (net.Conn, error)
	// The deadlines last set (unix ns, 0 for none), which a fresh
	// connection takes over: the transport sets a request's deadline before
	// it writes the request, so before the write that may replace the
	// connection, and a fresh one without it would wait for the answer of a
	// peer that stopped (SIGSTOP) until it answered or the connection broke.
	readDeadline, writeDeadline atomic.Int64
}

func newRaftConn(c net.Conn, redial func() (net.Conn, error)) *raftConn {
	rc := &raftConn{redial: redial}
	rc.conn.Store(&c)
	rc.used()
	return rc
}

func (c *raftConn) current() net.Conn { return *c.conn.Load() }

func (c *raftConn) used() { c.lastUse.Store(time.Now().UnixNano()) }

// Write sends p, on a fresh connection if the peer closed this one while it
// sat idle.
func (c *raftConn) Write(p []byte) (int, error) {
	conn := c.current()
	if time.Since(time.Unix(0, c.lastUse.Load())) > staleAfter && !peek.StillOpen(conn) {
		fresh, err := c.redial()
		if err != nil {
			return 0, err
		}
		conn.Close()
		fresh.SetReadDeadline(deadline(c.readDeadline.Load()))
		fresh.SetWriteDeadline(deadline(c.writeDeadline.Load()))
		c.conn.Store(&fresh)
		conn = fresh
	}
	n, err := conn.Write(p)
	c.used()
	return n, err
}

// Read reads from the current connection.
func (c *raftConn) Read(p []byte) (int, error) {
	n, err := c.current().Read(p)
	c.used()
	return n, err
}

// Close closes the current connection.
func (c *raftConn) Close() error { return c.current().Close() }

// LocalAddr is the current connection's.
func (c *raftConn) LocalAddr() net.Addr { return c.current().LocalAddr() }

// RemoteAddr is the current connection's.
func (c *raftConn) RemoteAddr() net.Addr { return c.current().RemoteAddr() }

// SetDeadline sets the current connection's deadline, and a fresh one's.
func (c *raftConn) SetDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	c.writeDeadline.Store(unixNano(t))
	return c.current().SetDeadline(t)
}

// SetReadDeadline sets the current connection's read deadline, and a fresh
// one's.
func (c *raftConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(unixNano(t))
	return c.current().SetReadDeadline(t)
}

// SetWriteDeadline sets the current connection's write deadline, and a
// fresh one's.
func (c *raftConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(unixNano(t))
	return c.current().SetWriteDeadline(t)
}

// unixNano is t in unix ns, 0 for the zero time (no deadline).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// staleCheckedStream is a group's stream layer whose connections replace
// themselves when their peer closed them while they sat idle (raftConn).
type staleCheckedStream struct{ raft.StreamLayer }

// Dial opens a connection to address that checks itself before a request.
func (s staleCheckedStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	open := func() (net.Conn, error) { return s.StreamLayer.Dial(address, timeout) }
	conn, err := open()
	if err != nil {
		return nil, err
	}
	return newRaftConn(conn, open), nil
}

// deadline is unixNano's inverse.
func deadline(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
