package federation

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/internal/resp"
)

// A link is this node's connection to another region: one TCP (or TLS)
// connection, authenticated both ways, over which batches of commands are
// pipelined: a writer appends a batch and waits, a reader goroutine hands
// each batch its replies in order. A broken connection fails every batch
// waiting on it; the next call dials again, the region's addresses in
// turn.

// Errors of a link.
var (
	errLinkDown = errors.New("federation link down")
	errAuth     = errors.New("federation link: authentication failed")
)

// link is the connection to one peer.
type link struct {
	f    *Federation
	peer Peer

	mu      sync.Mutex // guards cur, next and the backoff
	cur     *linkConn  // nil while down
	next    int        // the address to dial next
	retryAt time.Time  // no dial before then: the last one failed
	backoff time.Duration

	up      atomic.Bool
	rtt     atomic.Int64 // ms, smoothed: a batch's round trip
	calls   atomic.Int64
	failed  atomic.Int64
	lastErr atomic.Pointer[string]
}

// linkConn is one connection of a link, and the batches sent on it and
// not yet answered, in order.
type linkConn struct {
	c     net.Conn
	w     *bufio.Writer
	queue chan *batch
}

// maxInFlight bounds the batches waiting on a connection.
const maxInFlight = 256

// batch is a batch of commands waiting for its replies.
type batch struct {
	n       int
	sent    time.Time
	on      *linkConn
	replies []resp.Value // each reply's values in turn (an aggregate's elements after it)
	err     error
	done    chan struct{}
}

// linkTimeout bounds a call on a link: a dial with its handshake, or a
// batch's round trip.
func (f *Federation) linkTimeout() time.Duration { return max(time.Second, 4*f.cfg.Sync) }

// call sends cmds (each a command's words) as one batch and returns the
// replies (an error reply is a value, not an error).
func (l *link) call(ctx context.Context, cmds [][][]byte) ([]resp.Value, error) {
	l.calls.Add(1)
	b := &batch{n: len(cmds), done: make(chan struct{})}
	if err := l.send(ctx, b, cmds); err != nil {
		l.failed.Add(1)
		return nil, err
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		l.fail(b.on, fmt.Errorf("%w: %s: %w", errLinkDown, l.peer.Name, ctx.Err())) // behind: start again
		<-b.done
	}
	if b.err != nil {
		l.failed.Add(1)
		return nil, b.err
	}
	ms := time.Since(b.sent).Milliseconds()
	l.rtt.Store((3*l.rtt.Load() + ms + 3) / 4)
	return b.replies, nil
}

// send writes cmds on the connection, dialling it first if need be.
func (l *link) send(ctx context.Context, b *batch, cmds [][][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		if time.Now().Before(l.retryAt) {
			return fmt.Errorf("%w: %s: waiting %v to dial again", errLinkDown, l.peer.Name, l.backoff)
		}
		if err := l.dial(ctx); err != nil {
			// A region out of reach is dialled again after a pause that
			// doubles up to a few seconds: every round asks, and a dial
			// that hangs must not hold each of them.
			l.backoff = min(max(2*l.backoff, l.f.cfg.Sync), 2*time.Second)
			l.retryAt = time.Now().Add(l.backoff)
			return err
		}
		l.backoff = 0
	}
	var buf []byte
	for _, c := range cmds {
		buf = resp.AppendArray(buf, len(c))
		for _, a := range c {
			buf = resp.AppendBulk(buf, a)
		}
	}
	if len(l.cur.queue) == cap(l.cur.queue) {
		return fmt.Errorf("%w: %s: %d batches unanswered", errLinkDown, l.peer.Name, maxInFlight)
	}
	b.sent, b.on = time.Now(), l.cur
	l.cur.c.SetWriteDeadline(time.Now().Add(l.f.linkTimeout()))
	if _, err := l.cur.w.Write(buf); err == nil {
		l.cur.w.Flush() // an error shows as the reader's, failing b with the rest
	}
	l.cur.queue <- b
	return nil
}

// dial connects to the peer's next address and authenticates, both ways.
// l.mu is held.
func (l *link) dial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.f.linkTimeout())
	defer cancel()
	addr := l.peer.Addrs[l.next%len(l.peer.Addrs)]
	l.next++
	c, err := l.f.dial(ctx, addr)
	if err != nil {
		return l.down(fmt.Errorf("%w: %s at %s: %w", errLinkDown, l.peer.Name, addr, err))
	}
	if l.f.cfg.ClientTLS != nil {
		tc := tls.Client(c, l.f.cfg.ClientTLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return l.down(fmt.Errorf("%w: %s at %s: %w", errLinkDown, l.peer.Name, addr, err))
		}
		c = tc
	}
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	r := resp.NewReader(bufio.NewReader(c))
	if err := l.f.greetServer(c, r, l.peer.Name); err != nil {
		c.Close()
		return l.down(fmt.Errorf("%w: %s at %s: %w", errLinkDown, l.peer.Name, addr, err))
	}
	c.SetDeadline(time.Time{})
	l.cur = &linkConn{c: c, w: bufio.NewWriter(c), queue: make(chan *batch, maxInFlight)}
	if !l.up.Swap(true) {
		l.f.cfg.Log.Info("federation link up", "region", l.peer.Name, "addr", addr)
	}
	go l.read(l.cur, r)
	return nil
}

// down records err as the link's state and returns it.
func (l *link) down(err error) error {
	s := err.Error()
	l.lastErr.Store(&s)
	if l.up.Swap(false) {
		l.f.cfg.Log.Warn("federation link down", "region", l.peer.Name, "err", err)
	}
	return err
}

// read hands the replies on lc to its batches in order, until lc breaks;
// then it fails the batches left.
func (l *link) read(lc *linkConn, r *resp.Reader) {
	var err error
	for b := range lc.queue {
		if err == nil {
			for range b.n {
				lc.c.SetReadDeadline(time.Now().Add(l.f.linkTimeout()))
				if b.replies, err = r.Read(b.replies); err != nil {
					err = fmt.Errorf("%w: %s: %w", errLinkDown, l.peer.Name, err)
					l.fail(lc, err)
					break
				}
			}
		}
		b.err = err
		close(b.done)
	}
}

// fail closes lc, when it is still the link's connection: its reader
// then fails the batches waiting on it.
func (l *link) fail(lc *linkConn, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc == nil || l.cur != lc {
		return
	}
	l.cur = nil
	lc.c.Close()
	close(lc.queue)
	l.down(err)
}

// close closes the connection.
func (l *link) close() {
	l.mu.Lock()
	lc := l.cur
	l.mu.Unlock()
	l.fail(lc, errLinkDown)
}
