package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/peek"
)

// muxConn is the one long-lived multiplexed forwarding connection
// (streamForwardMux, forward.go) a node keeps to a peer. Requests forwarded
// to the peer are queued as frames; one writer goroutine writes everything
// queued while its previous write was under way in one write, and one reader
// goroutine hands each answer, tagged with its request's id, to its request.
// No goroutine is started per request.
//
// A call moves from queued (its frame written into the queue: the request,
// released, may still be given up by its waiter, and is then never sent) to
// written (the request is sent: it may be applied) to ended (answered, or
// failed). Everything is under mu; requests are answered or failed
// outside it, since a failure may route the request again through this
// connection.
type muxConn struct {
	f    *forwarder
	addr string
	wake chan struct{} // the writer has frames to write (room for one)
	done chan struct{} // closed once broken

	mu     sync.Mutex
	conn   net.Conn            // nil while dialling
	queue  []byte              // the frames not yet written
	queued []*muxCall          // their calls, in order
	calls  map[uint64]*muxCall // written, awaiting their answers
	next   uint64              // the last id given
	free   []*muxCall          // calls to reuse
	broken bool                // no call may be added
	timer  *time.Timer         // ends the calls past their deadlines
	armed  time.Time           // when timer fires; zero when stopped
	spare  []byte              // the writer's buffer, kept between writes
	// batch numbers the writer's takes; written is the last one whose
	// write was begun: calls of later ones were never sent.
	batch, written uint64
}

// muxCall is a request forwarded on a muxConn.
type muxCall struct {
	id       uint64
	r        *Request
	shard    int
	leader   *Member
	deadline time.Time
	off, end int    // its frame in queue, while queued
	ended    bool   // given up while queued: the writer skips it
	batch    uint64 // the writer's take it was sent in
}

// endedCall is a call to end, and why, once mu is let go.
type endedCall struct {
	r      *Request
	shard  int
	leader *Member
	err    error
}

// errPeerClosed breaks a connection found closed by its peer before a write.
var errPeerClosed = errors.New("the peer closed the connection")

const (
	// muxVersion is the byte a node answers a multiplexed stream's header
	// with, accepting it.
	muxVersion byte = 1
	// idleCheck is how long a connection may carry nothing before a write
	// first checks that the peer has not closed it.
	idleCheck = time.Second
)

// newMuxConn returns f's connection to the peer at addr, which dials it
// meanwhile: requests may be queued at once.
func newMuxConn(f *forwarder, addr string) *muxConn {
	m := &muxConn{f: f, addr: addr, wake: make(chan struct{}, 1), done: make(chan struct{}), calls: make(map[uint64]*muxCall)}
	m.timer = time.AfterFunc(time.Hour, m.expire)
	m.timer.Stop()
	go m.run()
	return m
}

// enqueue queues r, taken, for shard at leader, and releases it: false when
// the connection is broken (r is still taken; use another).
func (m *muxConn) enqueue(leader *Member, shard int, r *Request) bool {
	m.mu.Lock()
	if m.broken {
		m.mu.Unlock()
		return false
	}
	var c *muxCall
	if n := len(m.free); n > 0 {
		c, m.free = m.free[n-1], m.free[:n-1]
	} else {
		c = new(muxCall)
	}
	m.next++
	*c = muxCall{id: m.next, r: r, shard: shard, leader: leader, deadline: r.deadline, off: len(m.queue)}
	m.queue = appendMuxRequest(m.queue, c.id, shard, r)
	c.end = len(m.queue)
	// The frame holds the commands now: the request waits for the writer
	// as a request that has not left this node.
	r.release(leader.ID)
	m.queued = append(m.queued, c)
	m.arm(c.deadline)
	first := len(m.queued) == 1
	m.mu.Unlock()
	if first {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// appendMuxRequest appends a request frame: a four-byte length, the id, 'C',
// the shard and the batch.
func appendMuxRequest(b []byte, id uint64, shard int, r *Request) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = binary.AppendUvarint(b, id)
	b = append(b, frameCommands)
	b = binary.AppendUvarint(b, uint64(shard))
	b = appendBatch(b, 0, []*Request{r})
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// run dials the peer, then writes what is queued until the connection
// breaks.
func (m *muxConn) run() {
	conn, err := m.dial()
	if err != nil {
		m.broke(err)
		return
	}
	m.mu.Lock()
	if m.broken { // closed while dialling
		m.mu.Unlock()
		conn.Close()
		return
	}
	m.conn = conn
	m.mu.Unlock()
	go m.read(conn)
	lastWrite := time.Now()
	for {
		select {
		case <-m.wake:
		case <-m.done:
			return
		}
		m.mu.Lock()
		idle := len(m.calls) == 0
		out := m.take(m.spare[:0])
		batch := m.batch
		m.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		now := time.Now()
		// A peer that went away while nothing was in flight (it
		// restarted) must not be written to: what is written into a dead
		// connection looks like requests that may have been counted.
		if peek.Supported && idle && now.Sub(lastWrite) > idleCheck && !peek.StillOpen(conn) {
			m.broke(errPeerClosed)
			return
		}
		m.mu.Lock()
		if m.broken {
			m.mu.Unlock()
			return
		}
		m.written = batch
		m.mu.Unlock()
		conn.SetWriteDeadline(now.Add(frameTimeout))
		if _, err := conn.Write(out); err != nil {
			m.broke(err)
			return
		}
		lastWrite = now
		m.spare = out
	}
}

// take moves the queued calls whose requests may still be sent to the
// written ones and appends their frames to out. Under mu.
func (m *muxConn) take(out []byte) []byte {
	m.batch++
	for _, c := range m.queued {
		if c.ended || !c.r.send() { // given up: never sent
			m.free = append(m.free, c)
			continue
		}
		out = append(out, m.queue[c.off:c.end]...)
		c.batch = m.batch
		m.calls[c.id] = c
	}
	clear(m.queued)
	m.queued, m.queue = m.queued[:0], m.queue[:0]
	return out
}

// dial opens the stream and waits for the peer to accept it.
func (m *muxConn) dial() (net.Conn, error) {
	conn, err := m.f.dialer.open(m.addr, streamForwardMux, 0, dialTimeout)
	if err != nil {
		return nil, err
	}
	conn.SetReadDeadline(time.Now().Add(dialTimeout))
	var ack [1]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil || ack[0] != muxVersion {
		conn.Close()
		if err == nil {
			err = fmt.Errorf("%w: the peer answered forwarding with %d", errBadEntry, ack[0])
		}
		return nil, err
	}
	conn.SetReadDeadline(time.Time{})
	return conn, nil
}

// read hands each answer to its call until the connection breaks.
func (m *muxConn) read(conn net.Conn) {
	rd := bufio.NewReaderSize(conn, 32<<10)
	var buf []byte
	var c *muxCall
	for {
		frame, err := readMuxFrame(rd, buf)
		if err != nil {
			m.broke(err)
			return
		}
		buf = frame[:0]
		d := newReader(frame)
		id := d.Uvarint()
		if d.Err() != nil {
			m.broke(d.Err())
			return
		}
		m.mu.Lock()
		if c != nil {
			m.free = append(m.free, c)
		}
		c = m.calls[id]
		delete(m.calls, id)
		m.mu.Unlock()
		if c == nil {
			continue // ended already: at its deadline, or as stale
		}
		if hint, err := m.f.answered(c.leader, c.shard, c.r, d.Rest()); err != nil {
			m.f.ended(c.r, c.leader, hint, err)
		}
	}
}

// readMuxFrame reads one frame into buf's memory (growing it).
func readMuxFrame(rd *bufio.Reader, buf []byte) ([]byte, error) {
	h, err := rd.Peek(4) // not read into an array: that would escape
	if err != nil {
		if errors.Is(err, io.EOF) && len(h) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(h)
	rd.Discard(4)
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(rd, buf)
	return buf, err
}

// broke ends the connection for err: its calls not yet written are not
// applied; written ones may have been counted.
func (m *muxConn) broke(err error) {
	m.mu.Lock()
	if m.broken {
		m.mu.Unlock()
		return
	}
	m.broken = true
	close(m.done)
	if m.conn != nil {
		m.conn.Close()
	}
	m.timer.Stop()
	var ends []endedCall
	unsent := func(c *muxCall) endedCall {
		return endedCall{c.r, c.shard, c.leader, retryError(c.shard, c.leader.ID, ErrNotApplied, "unreachable: "+err.Error())}
	}
	for _, c := range m.queued {
		if !c.ended {
			ends = append(ends, unsent(c))
		}
	}
	for _, c := range m.calls {
		if c.batch > m.written { // taken for a write never begun
			ends = append(ends, unsent(c))
			continue
		}
		ends = append(ends, endedCall{c.r, c.shard, c.leader, retryError(c.shard, c.leader.ID, ErrMayHaveBeenCounted, "the connection to it broke before it answered")})
	}
	m.queued, m.calls, m.queue = nil, nil, nil
	m.mu.Unlock()
	m.f.drop(m)
	for _, e := range ends {
		m.f.ended(e.r, e.leader, "", e.err)
	}
}

// arm makes sure the timer fires by t. Under mu.
func (m *muxConn) arm(t time.Time) {
	if !m.armed.IsZero() && !t.Before(m.armed) {
		return
	}
	m.armed = t
	m.timer.Reset(time.Until(t))
}

// expire ends the calls past their deadlines: not applied when not yet
// written, may have been counted when written.
func (m *muxConn) expire() {
	now := time.Now()
	m.mu.Lock()
	if m.broken {
		m.mu.Unlock()
		return
	}
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var ends []endedCall
	for _, c := range m.queued {
		switch {
		case c.ended:
		case now.Before(c.deadline):
			later(c.deadline)
		default:
			c.ended = true
			ends = append(ends, endedCall{c.r, c.shard, c.leader, retryError(c.shard, c.leader.ID, ErrNotApplied, "its leader could not be reached within the request timeout")})
		}
	}
	for id, c := range m.calls {
		if now.Before(c.deadline) {
			later(c.deadline)
			continue
		}
		delete(m.calls, id)
		ends = append(ends, endedCall{c.r, c.shard, c.leader, retryError(c.shard, c.leader.ID, ErrMayHaveBeenCounted, "no answer within the request timeout")})
	}
	m.armed = time.Time{}
	if !next.IsZero() {
		m.arm(next)
	}
	m.mu.Unlock()
	for _, e := range ends {
		m.f.ended(e.r, e.leader, "", e.err)
	}
}

// stale lists the written calls for shard sent to another node than to
// (nil: any), as leaderMoved needs.
func (m *muxConn) stale(shard int, to *Member) []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []uint64
	for id, c := range m.calls {
		if c.shard == shard && (to == nil || c.leader.ID != to.ID) {
			ids = append(ids, id)
		}
	}
	return ids
}

// endMoved ends the calls ids that are still unanswered: the shard's
// leadership moved to moved.
func (m *muxConn) endMoved(ids []uint64, moved string) {
	m.mu.Lock()
	var ends []endedCall
	for _, id := range ids {
		if c, ok := m.calls[id]; ok {
			delete(m.calls, id)
			ends = append(ends, endedCall{c.r, c.shard, c.leader, retryError(c.shard, c.leader.ID, ErrMayHaveBeenCounted, fmt.Sprintf("the leadership moved to %s before it answered", moved))})
		}
	}
	m.mu.Unlock()
	for _, e := range ends {
		m.f.ended(e.r, e.leader, "", e.err)
	}
}
