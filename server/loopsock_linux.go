//go:build linux

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loopSock is a plain TCP connection served by an event loop: the socket's
// file descriptor, taken out of Go's network poller, read and written by the
// loop without blocking. It is the bottom of the connection's layers (the
// drain and the guard sit over it, as over a Go socket), so everything above
// is the same in both models.
//
// The loop alone reads and writes the descriptor and closes it. Other
// goroutines (Close's shutdown, the idle timeout, Close once its wait ran
// out) only ask: their Close and SetReadDeadline are requests the loop
// carries out between pipelines. When the connection needs what a loop
// cannot do without holding up every other connection (a write that would
// block, a lingering close, pushes written by another goroutine), the loop
// hands the socket over (handOver) to a Go connection, served by a goroutine
// of its own from then on, and every method passes to it.
type loopSock struct {
	loop         *eventLoop
	c            *conn // set when the server admits the connection
	fd           int
	local        net.Addr
	remote       net.Addr
	kept         int                         // bytes of an incomplete command at the front of c.in (the loop's own)
	closeAsked   atomic.Bool                 // Close was called: the loop closes it
	inner        atomic.Pointer[net.TCPConn] // the Go connection after the hand-over, nil before
	mu           sync.Mutex                  // guards the names below, and fd against its close
	closed       bool                        // fd is closed (finished or handed over)
	finWritten   bool                        // CloseWrite was called: close lingering
	readDeadline time.Time                   // the latest SetReadDeadline, for the lingering close

	// The loop's own, for a connection that waits (loopwait.go): the
	// pipeline suspended, whether its socket is unwatched meanwhile, and
	// the timer that keeps a segment's deadline.
	paused pausedPipeline
	muted  bool
	timer  *time.Timer
}

// errWouldBlock is a loop socket's Read when the client has sent nothing
// more: the loop waits for epoll to say it has.
var errWouldBlock = errors.New("nothing to read yet")

// newLoopSock takes sock's descriptor out of Go's poller for loop: it keeps
// a duplicate (non-blocking, as Go made it) and closes sock.
func newLoopSock(loop *eventLoop, sock net.Conn) (*loopSock, error) {
	sc, ok := sock.(syscall.Conn)
	if !ok {
		return nil, errNotASocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	s := &loopSock{loop: loop, fd: fd, local: sock.LocalAddr(), remote: sock.RemoteAddr()}
	sock.Close()
	return s, nil
}

// goConn is the Go connection the socket was handed over to, nil while the
// loop serves it. It takes no lock: Read, the loop's every pipeline, asks it.
func (s *loopSock) goConn() *net.TCPConn {
	return s.inner.Load()
}

// Read reads what the client sent without waiting: errWouldBlock when
// nothing has arrived. Only the loop calls it before the hand-over.
func (s *loopSock) Read(p []byte) (int, error) {
	if nc := s.goConn(); nc != nil {
		return nc.Read(p)
	}
	for {
		n, err := unix.Read(s.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes what the socket takes now. On the loop it is only the guard's
// last error before a connection closes, which is not worth holding the loop
// for; replies go through writeNow.
func (s *loopSock) Write(p []byte) (int, error) {
	if nc := s.goConn(); nc != nil {
		return nc.Write(p)
	}
	return s.writeNow(p)
}

// writeNow writes as much of p as the socket takes without waiting, and
// reports how much that was; an error only when the connection is broken.
func (s *loopSock) writeNow(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := unix.Write(s.fd, p[written:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return written, nil
		case err != nil:
			return written, err
		}
		written += n
	}
	return written, nil
}

// Close asks the loop to close the connection (lingering if CloseWrite was
// called), and returns at once.
func (s *loopSock) Close() error {
	if nc := s.goConn(); nc != nil {
		return nc.Close()
	}
	if s.closeAsked.CompareAndSwap(false, true) {
		s.loop.post(s, requestClose)
	}
	return nil
}

// CloseWrite ends what the server sends with a FIN: the first step of a
// lingering close, which the loop completes on a goroutine of its own.
func (s *loopSock) CloseWrite() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if nc := s.goConn(); nc != nil {
		return nc.CloseWrite()
	}
	if s.closed {
		return net.ErrClosed
	}
	s.finWritten = true
	return unix.Shutdown(s.fd, unix.SHUT_WR)
}

// SetReadDeadline wakes the connection: the loop reads it again, which is
// how a shutdown reaches a connection waiting for its client. A lingering
// close uses the deadline to bound its wait.
func (s *loopSock) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	if nc := s.goConn(); nc != nil {
		s.mu.Unlock()
		return nc.SetReadDeadline(t)
	}
	s.readDeadline = t
	s.mu.Unlock()
	s.loop.post(s, requestRead)
	return nil
}

// SetWriteDeadline bounds the writes of a connection handed over; the loop's
// never wait.
func (s *loopSock) SetWriteDeadline(t time.Time) error {
	if nc := s.goConn(); nc != nil {
		return nc.SetWriteDeadline(t)
	}
	return nil
}

// SetDeadline is both deadlines.
func (s *loopSock) SetDeadline(t time.Time) error {
	return errors.Join(s.SetReadDeadline(t), s.SetWriteDeadline(t))
}

func (s *loopSock) LocalAddr() net.Addr  { return s.local }
func (s *loopSock) RemoteAddr() net.Addr { return s.remote }

// SyscallConn gives the descriptor to Control (the drain asks the kernel how
// much of the replies is unacknowledged), under the lock that keeps the
// loop from closing it meanwhile.
func (s *loopSock) SyscallConn() (syscall.RawConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if nc := s.goConn(); nc != nil {
		return nc.SyscallConn()
	}
	return loopRawConn{s}, nil
}

// loopRawConn is a loop socket's descriptor for Control only.
type loopRawConn struct{ s *loopSock }

func (r loopRawConn) Control(f func(fd uintptr)) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.s.closed {
		return net.ErrClosed
	}
	f(uintptr(r.s.fd))
	return nil
}

func (loopRawConn) Read(func(fd uintptr) bool) error  { return errors.ErrUnsupported }
func (loopRawConn) Write(func(fd uintptr) bool) error { return errors.ErrUnsupported }

// fileConn is net.FileConn, a variable so that a test can make it fail as it
// does when the process is out of descriptors.
var fileConn = net.FileConn

// handOver moves the socket to a Go connection (Go's poller takes a
// duplicate of the descriptor, and the loop's is closed), through which
// every method passes from then on. A Close asked meanwhile, and the read
// deadline, carry over. The loop calls it once it has stopped watching the
// descriptor; the descriptor is closed whether or not it succeeds.
func (s *loopSock) handOver() (*net.TCPConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := os.NewFile(uintptr(s.fd), "client")
	fc, err := fileConn(f)
	f.Close()
	s.closed = true
	if err != nil {
		return nil, err
	}
	nc, ok := fc.(*net.TCPConn)
	if !ok {
		fc.Close()
		return nil, errNotASocket
	}
	s.inner.Store(nc)
	if !s.readDeadline.IsZero() {
		nc.SetReadDeadline(s.readDeadline)
	}
	if s.closeAsked.Load() && !s.finWritten {
		nc.Close()
	}
	return nc, nil
}

// closeFd closes the loop's descriptor, once: false when it was closed
// already (the connection finished, or was handed over).
func (s *loopSock) closeFd() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	unix.Close(s.fd)
	return true
}
