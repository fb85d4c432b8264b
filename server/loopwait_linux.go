//go:build linux

package server

import (
	"time"

	"golang.org/x/sys/unix"
)

// The loop's side of answering without waiting (loopwait.go): a connection
// suspended while its shards answer, resumed when they have.

// pausedPipeline is what a suspended connection has of its pipeline: the
// unanswered bytes (in c.in), the replies so far, and whether the
// connection goes on once they are written.
type pausedPipeline struct {
	rest, out []byte
	ok        bool
}

// armTimer has the loop resume the connection at deadline, when its shards
// have not answered by then.
func (s *loopSock) armTimer(deadline time.Time) {
	if s.timer == nil {
		s.timer = time.AfterFunc(time.Until(deadline), s.c.nowait.wake)
		return
	}
	s.timer.Reset(time.Until(deadline))
}

// resume goes on with a connection that waits: once every request of its
// segment is answered, or its deadline has passed (the requests still
// unanswered are then given up, with the error that says how far they got),
// or once the command answered aside is. A wake for a connection that does
// not wait, or is no longer the loop's, is late: ignored.
func (l *eventLoop) resume(s *loopSock) {
	c := s.c
	if l.conns[int32(s.fd)] != s {
		return
	}
	p := s.paused
	out := p.out
	switch {
	case c.nowait.aside:
		var done bool
		if out, done = c.takeAside(out); !done {
			return // a late wake from a segment: the goroutine wakes it
		}
	case c.nowait.suspended:
		b := &c.batch
		if !b.collect() {
			if time.Now().Before(b.deadline) {
				return // the others wake it, or the timer does
			}
			if b.giveUp(); !b.collect() {
				return // one being answered right now wakes it
			}
		}
		s.timer.Stop()
		c.nowait.suspended = false
		out = c.encodeSegment(out)
	default:
		return
	}
	s.paused = pausedPipeline{}
	rest, out, ok := c.answer(p.rest, out)
	l.answered(s, rest, out, ok && p.ok)
}

// mute stops watching a suspended connection's socket: watched
// level-triggered, bytes it cannot read yet would wake the loop again and
// again. The loop keeps the connection; unmute watches it again, and
// whatever arrived meanwhile wakes it at once.
func (l *eventLoop) mute(s *loopSock) {
	if !s.muted {
		unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, s.fd, nil)
		s.muted = true
	}
}

// unmute watches a connection's socket again after mute.
func (l *eventLoop) unmute(s *loopSock) {
	s.muted = false
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(s.fd)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		s.Close()
	}
}
