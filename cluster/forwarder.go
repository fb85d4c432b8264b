package cluster

import (
	"bufio"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/peek"
)

// forwarder sends requests to the nodes that lead their shards (see
// forward.go for the frames). To each peer it keeps one multiplexed
// connection (muxconn.go) that carries every request forwarded to it, and a
// few idle control connections for status and catalogue calls.
//
// A forwarded request waits for its answer no longer than its deadline, and
// no longer than its leader leads: when this node learns that the shard's
// leadership moved away from the node it was sent to, and that node has not
// answered within movedGrace, the request is given up at once ("it may have
// been counted": it was sent). A live old leader answers within the grace
// (it hands requests it can no longer apply back with the new leader's
// name, and those are routed again); a dead, frozen or cut-off one never
// would, and without this its requests would wait for it while the new
// leader serves everyone else.
type forwarder struct {
	dialer busDialer
	// ended is given a forwarded request the forwarder could not answer
	// from its leader, with the error to end it with (see fail) and the id
	// of the node that leads the shard when the peer named one.
	ended  func(r *Request, leader *Member, hint string, err error)
	mu     sync.Mutex
	idle   map[string][]*peerConn
	muxes  map[string]*muxConn // by peer address
	closed bool
}

const (
	// forwardPool is how many idle control connections are kept per peer,
	// for status and catalogue calls. A call that finds none dials one; one
	// that finds the pool full is closed after its answer.
	forwardPool = 64
	// movedGrace is how long a node that lost a shard's leadership has to
	// answer the requests it was forwarded before they are given up.
	movedGrace = 200 * time.Millisecond
	// dialTimeout bounds opening a connection to a peer.
	dialTimeout = 2 * time.Second
)

// newForwarder returns a forwarder that opens its connections with dialer
// and gives the requests it cannot answer to ended.
func newForwarder(dialer busDialer, ended func(r *Request, leader *Member, hint string, err error)) *forwarder {
	return &forwarder{
		dialer: dialer, ended: ended,
		idle: make(map[string][]*peerConn), muxes: make(map[string]*muxConn),
	}
}

// peerConn is a forwarding connection and the reader of its answers, kept
// together so that a pooled connection reuses its buffer. Answers are read
// whole before the connection goes back to the pool: nothing is left
// buffered.
type peerConn struct {
	net.Conn
	rd *bufio.Reader
}

// forward applies r's commands on shard at leader, and returns at once: r
// is answered when the leader answers it (or dropped when its waiter gave up
// on it), or else given to f.ended.
func (f *forwarder) forward(leader *Member, shard int, r *Request) {
	if !r.take() {
		return
	}
	for {
		m := f.mux(leader.Bus)
		if m == nil { // the node is closing
			r.release(leader.ID)
			f.ended(r, leader, "", ErrShuttingDown)
			return
		}
		if m.enqueue(leader, shard, r) {
			return
		}
		f.drop(m) // broken: the next one dials again
	}
}

// mux returns the multiplexed connection to addr, opening it when there is
// none: nil once the forwarder is closed.
func (f *forwarder) mux(addr string) *muxConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.muxes[addr]; m != nil {
		return m
	}
	if f.closed {
		return nil
	}
	m := newMuxConn(f, addr)
	f.muxes[addr] = m
	return m
}

// drop forgets m, which broke.
func (f *forwarder) drop(m *muxConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.muxes[m.addr] == m {
		delete(f.muxes, m.addr)
	}
}

// answered handles leader's reply to r, sent: it answers r itself when the
// leader did (or drops r when its waiter gave up on it), and returns nil;
// otherwise it returns the error r is to end with, and the id of the node
// that leads the shard when the peer named one.
func (f *forwarder) answered(leader *Member, shard int, r *Request, reply []byte) (hint string, err error) {
	d := wire{b: reply}
	switch d.byte() {
	case replyOK:
	case replyLeader:
		hint = string(d.b)
		return hint, retryError(shard, hint, ErrNotApplied, leader.ID+" does not lead it")
	case replyError:
		return "", d.requestError(leader.ID)
	default:
		return "", &Failure{fmt.Sprintf("bad reply from %s: %v", leader.ID, errBadEntry)}
	}
	if !r.claim() {
		return "", nil
	}
	for i := range r.Results {
		r.Results[i] = d.result()
	}
	if d.err != nil {
		r.answer(&Failure{fmt.Sprintf("bad reply from %s: %v", leader.ID, d.err)})
		return "", nil
	}
	r.answer(nil)
	return "", nil
}

// leaderMoved is told that shard's leader changed from one node to another
// (nil: unknown). The requests forwarded to a node that no longer leads it,
// and still unanswered after movedGrace, are given up.
func (f *forwarder) leaderMoved(shard int, from, to *Member) {
	type muxStale struct {
		m   *muxConn
		ids []uint64
	}
	var stale []muxStale
	f.mu.Lock()
	muxes := slices.Collect(maps.Values(f.muxes))
	f.mu.Unlock()
	for _, m := range muxes {
		if ids := m.stale(shard, to); len(ids) > 0 {
			stale = append(stale, muxStale{m, ids})
		}
	}
	if len(stale) == 0 {
		return
	}
	moved := "no node (an election is under way)"
	if to != nil {
		moved = to.ID
	}
	time.AfterFunc(movedGrace, func() {
		for _, s := range stale {
			s.m.endMoved(s.ids, moved)
		}
	})
}

// status asks the peer at addr about its replicas, and about this node
// (self and incarnation), waiting no longer than timeout.
func (f *forwarder) status(addr, self, incarnation string, timeout time.Duration) (nodeStatus, error) {
	frame := appendString(appendString([]byte{frameStatus}, self), incarnation)
	reply, _, err := f.call(addr, frame, time.Now().Add(timeout))
	if err != nil {
		return nodeStatus{}, err
	}
	d := wire{b: reply}
	if d.byte() != replyOK {
		return nodeStatus{}, fmt.Errorf("%w: status refused by %s", errBadEntry, addr)
	}
	return decodeStatus(&d)
}

// catalogueOp sends a catalogue change to the catalogue's leader at addr:
// the index it was committed at, or the id of the leader to ask instead
// (the error then says it was not applied), or the error that refused it.
func (f *forwarder) catalogueOp(addr string, data []byte, deadline time.Time) (index uint64, leader string, err error) {
	reply, sent, err := f.call(addr, append([]byte{frameCatalogue}, data...), deadline)
	if err != nil {
		if !sent {
			return 0, "", fmt.Errorf("the catalogue's leader is unreachable: %v: %w", err, ErrNotApplied)
		}
		return 0, "", fmt.Errorf("the catalogue's leader did not answer: %v: %w", err, ErrMayHaveBeenCounted)
	}
	d := wire{b: reply}
	switch d.byte() {
	case replyOK:
		index = d.uvarint()
		return index, "", d.err
	case replyLeader:
		return 0, string(d.b), fmt.Errorf("the catalogue's leader moved: %w", ErrNotApplied)
	case replyError:
		return 0, "", d.requestError(addr)
	}
	return 0, "", fmt.Errorf("%w: catalogue reply from %s", errBadEntry, addr)
}

// call sends one frame to addr on a control connection and reads the
// answer, by deadline; sent reports whether the frame may have reached the
// peer.
func (f *forwarder) call(addr string, frame []byte, deadline time.Time) (reply []byte, sent bool, err error) {
	conn, err := f.get(addr)
	if err != nil {
		return nil, false, err
	}
	conn.SetDeadline(deadline)
	written, err := writeFrameCounted(conn, frame)
	if err == nil {
		reply, err = readFrame(conn.rd)
	}
	if err != nil {
		conn.Close()
		// A write that took nothing (its deadline had passed before it
		// began, on a loaded node) sent nothing: the peer cannot have
		// counted the request, and its caller may safely send it again.
		return nil, written > 0, err
	}
	f.put(addr, conn)
	return reply, true, nil
}

// get returns an idle connection to addr that is still open, or a new one.
// An idle connection the peer closed (it restarted, say) must not be used: a
// frame written into it is lost, yet its loss would look like a change that
// may have been committed.
func (f *forwarder) get(addr string) (*peerConn, error) {
	for {
		f.mu.Lock()
		conns := f.idle[addr]
		if len(conns) == 0 {
			f.mu.Unlock()
			conn, err := f.dialer.open(addr, streamForward, 0, dialTimeout)
			if err != nil {
				return nil, err
			}
			return &peerConn{Conn: conn, rd: bufio.NewReader(conn)}, nil
		}
		conn := conns[len(conns)-1]
		f.idle[addr] = conns[:len(conns)-1]
		f.mu.Unlock()
		if peek.StillOpen(conn.Conn) {
			return conn, nil
		}
		conn.Close()
	}
}

func (f *forwarder) put(addr string, conn *peerConn) {
	conn.SetDeadline(time.Time{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.idle[addr]) >= forwardPool {
		conn.Close()
		return
	}
	f.idle[addr] = append(f.idle[addr], conn)
}

// close drops the idle connections and breaks the multiplexed ones.
func (f *forwarder) close() {
	f.mu.Lock()
	f.closed = true
	for addr, conns := range f.idle {
		for _, c := range conns {
			c.Close()
		}
		delete(f.idle, addr)
	}
	muxes := slices.Collect(maps.Values(f.muxes))
	f.mu.Unlock()
	for _, m := range muxes {
		m.broke(ErrShuttingDown)
	}
}
