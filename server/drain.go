package server

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// An orderly shutdown must deliver the reply of every decision already taken.
// A connection's loop reads a client's bytes, runs the commands they
// complete, writes the replies, and only then reads again: a connection is
// between pipelines exactly when it is in Read. drainConn records that, so
// Close can shut an idle connection at once and let a busy one finish its
// pipeline, its replies written, and close at its next Read.
//
// Closing itself needs care: a socket closed while the client's bytes wait
// unread in it (a pipeline the server will not run) sends a reset, and the
// reset throws away the replies still queued in the server's socket, not yet
// taken by a client that reads slowly. A busy connection is therefore closed
// lingering: write side first, so the replies end with a FIN, then the
// client's bytes are read and discarded until it closes too or lingerTimeout
// passes. An idle one is closed lingering too while its socket still holds
// replies the client has not acknowledged (it may have sent its next pipeline
// already); one whose replies have all arrived is closed at once, so a pool
// of idle clients that ignore the FIN does not hold the shutdown up.

// The states of a drainConn.
const (
	connIdle       int32 = iota // the connection's loop is waiting in Read
	connBusy                    // commands read are being run and answered
	connClosed                  // shut while idle
	connCloseAfter              // shut while busy: close at the next Read
)

// lingerTimeout bounds the lingering close of a busy connection.
const lingerTimeout = 2 * time.Second

// drainConn is a client connection whose pipeline boundaries Close can see.
// It wraps the socket (or its TLS layer), below the protocol guard.
type drainConn struct {
	net.Conn
	state atomic.Int32
}

// Read marks the connection idle while it waits and busy once bytes arrive.
// Bytes that arrive after a shutdown began are not handed on: their commands
// are never run, so no decision goes unanswered.
func (c *drainConn) Read(p []byte) (int, error) {
	if !c.idle() {
		c.closeLingering()
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if n > 0 && c.state.CompareAndSwap(connIdle, connBusy) {
		return n, err
	}
	switch c.state.Load() {
	case connCloseAfter: // shut while idle, with replies on their way
		c.closeLingering()
		return 0, net.ErrClosed
	case connClosed:
		return 0, net.ErrClosed
	}
	return n, err
}

// idle marks the connection idle, its pipeline answered: false when a
// shutdown began meanwhile, and the connection must close instead.
func (c *drainConn) idle() bool {
	return c.state.CompareAndSwap(connBusy, connIdle) || c.state.Load() == connIdle
}

// closeLingering closes the write side, discards what the client still sends
// until it closes or lingerTimeout passes, and then closes the socket. (On an
// event loop's socket the discarding returns at once, and the loop lingers
// on a goroutine once the socket is closed: eventloop_linux.go.)
func (c *drainConn) closeLingering() {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
		discardUntilClosed(c.Conn)
		return
	}
	c.Conn.Close()
}

// discardUntilClosed reads and drops what the client sends until it closes
// or lingerTimeout passes, and closes nc, whose write side is closed.
func discardUntilClosed(nc net.Conn) {
	nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.Copy(io.Discard, nc)
	nc.Close()
}

// shutdown closes the connection now if it is idle, or after the pipeline it
// is answering. An idle connection whose replies have not all reached the
// client is woken from its Read to close lingering, as a busy one does.
func (c *drainConn) shutdown() {
	for {
		switch c.state.Load() {
		case connIdle:
			if unacknowledged(c.Conn) {
				if c.state.CompareAndSwap(connIdle, connCloseAfter) {
					c.Conn.SetReadDeadline(time.Now())
					return
				}
			} else if c.state.CompareAndSwap(connIdle, connClosed) {
				c.Conn.Close()
				return
			}
		case connBusy:
			if c.state.CompareAndSwap(connBusy, connCloseAfter) {
				return
			}
		default:
			return
		}
	}
}

// closeIfIdle closes the connection if it is waiting for a command (for
// the idle timeout): one whose commands are being answered is left alone.
func (c *drainConn) closeIfIdle() {
	if c.state.CompareAndSwap(connIdle, connClosed) {
		c.Conn.Close()
	}
}

// drainingListener stops taking connections without ending the accept loop:
// while draining, the socket is closed but Accept waits until Close.
type drainingListener struct {
	net.Listener
	draining atomic.Bool
	stop     chan struct{}
	once     sync.Once
}

func newDrainingListener(ln net.Listener) *drainingListener {
	return &drainingListener{Listener: ln, stop: make(chan struct{})}
}

// Accept returns the next connection; while draining, it waits for Close.
func (l *drainingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.draining.Load() {
		<-l.stop
		return nil, net.ErrClosed
	}
	return c, err
}

// drain closes the socket, so no connection is accepted any more, and keeps
// the accept loop waiting.
func (l *drainingListener) drain() {
	l.draining.Store(true)
	l.Listener.Close()
}

// Close ends the accept loop.
func (l *drainingListener) Close() error {
	l.drain()
	l.once.Do(func() { close(l.stop) })
	return nil
}
