//go:build linux

package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// An event loop serves many connections on one thread, as Redis does: it
// waits in epoll_wait, reads every socket that has bytes, answers the
// commands they complete and writes the replies, never parking (over shards
// that answer later it yields its thread before it waits: run). With a
// goroutine per connection each pipeline costs a read that finds nothing
// (the next pipeline has not arrived when the replies are written), a park
// and a wake through Go's poller and scheduler, which the loop saves
// (docs/performance.md, "Sixth round", has what it saved).
//
// A loop never waits. Shards that apply a request on the caller's goroutine
// (in memory) answer at once; over shards that answer later (durable, or a
// cluster's) the loop suspends a pipeline until they have (loopwait.go). It
// serves plain TCP connections; TLS ones keep their goroutine. A command
// that may wait other than for its shards (every shard at once, a backup) is
// answered by a goroutine while the connection waits on its loop
// (loopwait.go). What would make the loop wait for the connection itself is
// handed to a goroutine of the connection's own, for good: replies the
// socket does not take at once (a client that reads slowly, or a large
// reply), and client-side caching, whose pushes another goroutine writes.
// What other goroutines do to a connection (Close's shutdown, the idle
// timeout) reaches the loop as requests, carried out between pipelines
// (loopsock_linux.go).

// EventLoopsSupported reports whether Config.EventLoops can be used here.
const EventLoopsSupported = true

// What a request asks of the loop about one connection.
type requestKind uint8

const (
	requestAdd    requestKind = iota // start serving it
	requestRead                      // read it now: a shutdown wakes it
	requestClose                     // close it, lingering after CloseWrite
	requestResume                    // a request it sent was answered or timed out, or its command aside
)

// loopRequest is one request: what to do, and to which connection.
type loopRequest struct {
	s    *loopSock
	kind requestKind
}

// eventLoops are the server's loops; connections are dealt round-robin.
type eventLoops struct {
	loops  []*eventLoop
	next   atomic.Uint32
	served atomic.Int64 // connections in the loops now, for INFO
	// shardsAnswerLater: requests are answered after Submit returns, so the
	// loops suspend a pipeline instead of waiting (loopwait.go).
	shardsAnswerLater bool
}

// eventLoop is one loop: its epoll set, the connections in it, and the
// requests other goroutines left for it.
type eventLoop struct {
	all   *eventLoops
	ep    int                 // the epoll set
	wake  int                 // an eventfd in it: requests are queued
	conns map[int32]*loopSock // by descriptor; the loop's own
	done  chan struct{}       // closed when the loop has ended
	waits uint64              // waits so far, for mayHold
	holds bool                // whether it may wait holding its processor (mayHold)

	mu        sync.Mutex
	queue     []loopRequest
	spare     []loopRequest
	stopAsked bool // stop was asked: the loop ends once it sees it
	stopped   bool // the loop has ended: no request is taken any more
}

// startEventLoops starts n loops, each on a goroutine of its own (an
// in-memory one keeps its thread: run).
// answerLater: the shards answer requests after Submit returns.
func startEventLoops(n int, answerLater bool) (*eventLoops, error) {
	ls := &eventLoops{shardsAnswerLater: answerLater}
	for range n {
		l, err := newEventLoop()
		if err != nil {
			ls.stop()
			return nil, fmt.Errorf("event loop: %w", err)
		}
		l.all = ls
		ls.loops = append(ls.loops, l)
		go l.run()
	}
	return ls, nil
}

func newEventLoop() (*eventLoop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil, err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)}); err != nil {
		unix.Close(ep)
		unix.Close(wake)
		return nil, err
	}
	return &eventLoop{ep: ep, wake: wake, conns: make(map[int32]*loopSock), done: make(chan struct{})}, nil
}

// adopt takes a plain TCP socket for the next loop, and returns the loop
// socket that replaces it; sock itself when it cannot (a goroutine serves
// it then).
func (ls *eventLoops) adopt(sock net.Conn) net.Conn {
	if ls == nil {
		return sock
	}
	if _, ok := sock.(*net.TCPConn); !ok {
		return sock
	}
	l := ls.loops[int(ls.next.Add(1))%len(ls.loops)]
	s, err := newLoopSock(l, sock)
	if err != nil {
		return sock
	}
	return s
}

// serve starts serving c on its loop, when nc (the bottom of its layers) is
// a loop socket; it reports false when c needs a goroutine.
func (ls *eventLoops) serve(nc net.Conn, c *conn) bool {
	s, ok := nc.(*loopSock)
	if !ok {
		return false
	}
	s.c = c
	c.nowait.loop = true
	c.nowait.wake = func() { s.loop.post(s, requestResume) }
	if ls.shardsAnswerLater {
		c.nowait.on = true
		c.batch.setWake(c.nowait.wake)
	}
	s.loop.post(s, requestAdd)
	return true
}

// clients is how many connections the loops serve now.
func (ls *eventLoops) clients() int64 {
	if ls == nil {
		return 0
	}
	return ls.served.Load()
}

// stop ends every loop, closing the connections still in it, and waits.
func (ls *eventLoops) stop() {
	for _, l := range ls.loops {
		l.post(nil, requestClose)
	}
	for _, l := range ls.loops {
		<-l.done
	}
}

// post queues a request and wakes the loop if it was not already woken. A
// nil s with requestClose stops the loop.
func (l *eventLoop) post(s *loopSock, kind requestKind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	if s == nil {
		l.stopAsked = true
	} else {
		l.queue = append(l.queue, loopRequest{s, kind})
	}
	if len(l.queue) <= 1 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(l.wake, one[:])
	}
}

// run is the loop: it waits for sockets with bytes (or requests), and
// serves them, until stopped. A loop whose shards answer in place keeps
// its thread; one whose shards answer later yields before it blocks (wait).
func (l *eventLoop) run() {
	yield := l.all.shardsAnswerLater
	if !yield {
		runtime.LockOSThread()
	}
	defer close(l.done)
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := l.wait(events, yield)
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.end()
			return
		}
		for _, ev := range events[:max(n, 0)] {
			if ev.Fd == int32(l.wake) {
				if !l.carryOut() {
					l.end()
					return
				}
			} else if s := l.conns[ev.Fd]; s != nil {
				l.readable(s)
			}
		}
	}
}

// wait waits in epoll_wait for sockets with bytes or requests. With yield it
// first looks without waiting and, finding nothing, yields, then waits
// holding its processor before it blocks as Go's scheduler expects. Over
// shards that answer later, the pipelines the loop has just read made
// goroutines runnable (a shard's proposer, given their requests; answers to
// hand on), queued on the loop's processor. Blocked there, the loop would
// leave them for another thread to be woken, or for Go's monitor thread to
// take the processor back; yielding runs them on this thread first, which
// in a 3-node cluster saves context switches (docs/performance.md,
// "Eleventh round"), and waiting holding the processor (heldwait_linux.go)
// saves more ("Twelfth round"). A loop whose shards answer in place makes
// nothing runnable, and the extra look would only cost it a system call.
func (l *eventLoop) wait(events []unix.EpollEvent, yield bool) (int, error) {
	if yield {
		if n, err := epollWaitHolding(l.ep, events, 0); n != 0 || err != nil {
			return n, err
		}
		runtime.Gosched()
		if l.mayHold() {
			if n, err := l.waitHolding(events, heldWait); n != 0 || err != nil {
				return n, err
			}
		}
	}
	return unix.EpollWait(l.ep, events, -1)
}

// carryOut does what the queued requests ask; false when the loop must stop.
func (l *eventLoop) carryOut() bool {
	var count [8]byte
	unix.Read(l.wake, count[:])
	l.mu.Lock()
	queue, stop := l.queue, l.stopAsked
	l.queue, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	for i, r := range queue {
		switch r.kind {
		case requestAdd:
			l.add(r.s)
		case requestRead:
			if l.conns[int32(r.s.fd)] == r.s {
				l.readable(r.s)
			}
		case requestClose:
			l.close(r.s)
		case requestResume:
			l.resume(r.s)
		}
		queue[i] = loopRequest{}
	}
	l.mu.Lock()
	l.spare = queue[:0]
	l.mu.Unlock()
	return !stop
}

// add starts watching a connection's socket: level-triggered, so bytes that
// came before it was added are read at once.
func (l *eventLoop) add(s *loopSock) {
	if s.closeAsked.Load() {
		l.finish(s)
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(s.fd)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		l.finish(s)
		return
	}
	l.conns[int32(s.fd)] = s
	l.all.served.Add(1)
}

// close closes a connection whose Close was called: at once, or lingering
// on a goroutine when CloseWrite came first (drain.go says why).
func (l *eventLoop) close(s *loopSock) {
	if s.c != nil && s.c.nowait.waits() {
		return // once answered: the shards or a goroutine still hold it
	}
	s.mu.Lock()
	lingering := s.finWritten && !s.closed
	s.mu.Unlock()
	if !lingering {
		l.finish(s)
		return
	}
	l.detach(s)
	nc, err := s.handOver()
	go func() {
		defer s.c.release()
		if err == nil {
			discardUntilClosed(nc)
		}
	}()
}

// readable reads what a connection's client sent, answers the commands it
// completes and writes their replies, as a connection's goroutine does
// (serveFrom) but without waiting: replies the socket does not take at
// once, and a connection that tracks keys, go to a goroutine of its own.
func (l *eventLoop) readable(s *loopSock) {
	if s.closeAsked.Load() {
		return // the request that closes it is queued
	}
	c := s.c
	if c.nowait.waits() {
		l.mute(s) // it is read again once resumed
		return
	}
	n, err := c.read(s.kept)
	if n == 0 {
		if !errors.Is(err, errWouldBlock) {
			s.Close()
		}
		return
	}
	c.wmu.Lock()
	rest, out, ok := c.answerPipeline(c.in[:s.kept+n])
	l.answered(s, rest, out, ok && err == nil)
}

// answered goes on from what answer did with a pipeline: it suspends the
// connection while a segment it sent is unanswered, or writes the replies
// and waits for the client's next bytes, or hands the connection to a
// goroutine. rest is what answer left, out the replies; ok is false when the
// connection must close once they are written. The caller holds c.wmu,
// which is released once the replies are written.
func (l *eventLoop) answered(s *loopSock, rest, out []byte, ok bool) {
	c := s.c
	if c.nowait.waits() {
		s.paused = pausedPipeline{rest: rest, out: out, ok: ok}
		if c.nowait.suspended {
			s.armTimer(c.batch.deadline)
		}
		return
	}
	written, werr := s.writeNow(out)
	if werr == nil && (written < len(out) || c.tracker != nil) {
		l.handOff(s, out, written, rest, ok)
		return
	}
	c.keepOut(out)
	c.wmu.Unlock()
	if werr != nil || !ok {
		s.Close()
		return
	}
	s.kept = copy(c.in, rest)
	if s.muted {
		l.unmute(s)
	}
	if s.closeAsked.Load() {
		l.close(s) // asked while it was suspended
		return
	}
	// The goroutine's next Read would mark the connection idle (for the
	// idle timeout and a shutdown), close it if a shutdown began while it
	// answered, or report the guard's error: the loop must too, now, and
	// not when the client sends more.
	if !c.drain.idle() || c.nc.(*guardConn).failed != nil {
		l.readable(s)
	}
}

// handOff gives the connection a goroutine of its own for the rest of its
// life: it writes the replies the socket did not take (out[written:]) and
// serves on from rest, the bytes of an incomplete command. The caller holds
// c.wmu; the goroutine releases it once the replies are written, so that no
// push gets in before them.
func (l *eventLoop) handOff(s *loopSock, out []byte, written int, rest []byte, ok bool) {
	c := s.c
	l.detach(s)
	kept := copy(c.in, rest)
	c.nowait = nowait{}
	c.batch.setWake(nil)
	if _, err := s.handOver(); err != nil {
		// No descriptor for Go's poller (out of files, say): the
		// connection ends here, its socket closed by handOver.
		c.keepOut(out)
		c.wmu.Unlock()
		c.release()
		return
	}
	go func() {
		defer c.release()
		defer c.nc.Close()
		var err error
		if written < len(out) {
			_, err = c.nc.Write(out[written:])
		}
		c.keepOut(out)
		c.wmu.Unlock()
		if err == nil && ok {
			c.serveFrom(kept)
		}
	}()
}

// detach stops watching a connection; the loop is done with it.
func (l *eventLoop) detach(s *loopSock) {
	if l.conns[int32(s.fd)] == s {
		unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, s.fd, nil)
		delete(l.conns, int32(s.fd))
		l.all.served.Add(-1)
	}
}

// finish closes a connection the loop serves and lets the server forget it
// (or, while a command aside runs, has its goroutine do so once done); one
// already closed (finished, or handed over) is left alone.
func (l *eventLoop) finish(s *loopSock) {
	l.detach(s)
	if s.closeFd() && !s.c.abandonAside() {
		s.c.release()
	}
}

// end closes every connection still in the loop, and the loop's own
// descriptors: the server is closing.
func (l *eventLoop) end() {
	l.mu.Lock()
	l.stopped = true
	queue := l.queue
	l.queue = nil
	l.mu.Unlock()
	for _, r := range queue {
		if r.kind == requestAdd {
			l.finish(r.s)
		}
	}
	for _, s := range l.conns {
		l.finish(s)
	}
	unix.Close(l.ep)
	unix.Close(l.wake)
}
