package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// forwarder sends requests to the nodes that lead their shards (see
// forward.go for the frames). To each peer it keeps one multiplexed
// connection (muxconn.go) that carries every request forwarded to it; to a
// peer of a release before those it forwards the old way, a connection per
// request in flight, keeping a few idle ones, as it does for status and
// catalogue calls.
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
	ended func(r *Request, leader *Member, hint string, err error)
	mu    sync.Mutex
	idle  map[string][]*peerConn
	calls map[*forwardCall]struct{} // requests forwarded the old way awaiting their answer
	muxes map[string]*muxConn       // by peer address
	// old holds the peers that refused multiplexed forwarding, until when
	// they are forwarded to the old way.
	old    map[string]time.Time
	closed bool
}

// forwardCall is a forwarded request awaiting its answer.
type forwardCall struct {
	shard int
	peer  string   // the id of the node it was sent to
	conn  net.Conn // set once dialled, under the forwarder's mu
	moved string   // the new leader, once given up for that; under mu
	// send is asked once a connection is open, before the frame is written:
	// false when the request's waiter has given up on it.
	send func() bool
}

// errGivenUp ends a call whose request's waiter gave up on it before it was
// sent.
var errGivenUp = errors.New("given up before it was sent")

const (
	// forwardPool is how many idle connections are kept per peer for the
	// old way of forwarding (to a peer of an older release) and for status
	// and catalogue calls. Every request forwarded the old way at the same
	// moment needs a connection of its own; one that finds the pool full is
	// closed after its answer, and the next request dials again (a
	// handshake, and a goroutine on the peer), so the pool is sized for the
	// requests a busy node forwards to one peer at once, not for the few of
	// a quiet one.
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
		idle: make(map[string][]*peerConn), calls: make(map[*forwardCall]struct{}),
		muxes: make(map[string]*muxConn), old: make(map[string]time.Time),
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
		if m == nil {
			break
		}
		if m.enqueue(leader, shard, r) {
			return
		}
		f.drop(m, false) // broken: the next one dials again
	}
	frame := []byte{frameCommands}
	frame = binary.AppendUvarint(frame, uint64(shard))
	frame = appendBatch(frame, 0, []*Request{r})
	// The frame holds the commands now: the request waits for a connection
	// as a request that has not left this node.
	r.release(leader.ID)
	go f.forwardOld(leader, shard, r, frame)
}

// mux returns the multiplexed connection to addr, opening it when there is
// none: nil when the peer is to be forwarded to the old way.
func (f *forwarder) mux(addr string) *muxConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.muxes[addr]; m != nil {
		return m
	}
	if until, ok := f.old[addr]; ok {
		if time.Now().Before(until) {
			return nil
		}
		delete(f.old, addr)
	}
	if f.closed {
		return nil
	}
	m := newMuxConn(f, addr)
	f.muxes[addr] = m
	return m
}

// drop forgets m, which broke; old says its peer refused multiplexed
// forwarding.
func (f *forwarder) drop(m *muxConn, old bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.muxes[m.addr] == m {
		delete(f.muxes, m.addr)
	}
	if old {
		f.old[m.addr] = time.Now().Add(oldPeerRetry)
	}
}

// forwardOld sends r, released, to leader over a connection of its own
// (the stream of releases before multiplexed forwarding), frame holding
// its commands, and waits for the answer.
func (f *forwarder) forwardOld(leader *Member, shard int, r *Request, frame []byte) {
	c := &forwardCall{shard: shard, peer: leader.ID, send: r.send}
	reply, sent, err := f.call(c, leader.Bus, frame, r.deadline)
	if errors.Is(err, errGivenUp) {
		return
	}
	var hint string
	switch {
	case err == nil:
		hint, err = f.answered(leader, shard, r, reply)
	case !sent:
		err = retryError(shard, leader.ID, ErrNotApplied, "unreachable: "+err.Error())
	default:
		why := "the connection to it broke before it answered"
		switch {
		case c.moved != "":
			why = fmt.Sprintf("the leadership moved to %s before it answered", c.moved)
		case errors.Is(err, os.ErrDeadlineExceeded):
			why = "no answer within the request timeout"
		}
		err = retryError(shard, leader.ID, ErrMayHaveBeenCounted, why)
	}
	if err != nil {
		f.ended(r, leader, hint, err)
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
	default: // replyText, from a release before typed errors
		return "", PeerReply(d.b)
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
	var stale []*forwardCall
	type muxStale struct {
		m   *muxConn
		ids []uint64
	}
	var staleMux []muxStale
	f.mu.Lock()
	for c := range f.calls {
		if c.shard == shard && (to == nil || c.peer != to.ID) {
			stale = append(stale, c)
		}
	}
	muxes := slices.Collect(maps.Values(f.muxes))
	f.mu.Unlock()
	for _, m := range muxes {
		if ids := m.stale(shard, to); len(ids) > 0 {
			staleMux = append(staleMux, muxStale{m, ids})
		}
	}
	if len(stale) == 0 && len(staleMux) == 0 {
		return
	}
	moved := "no node (an election is under way)"
	if to != nil {
		moved = to.ID
	}
	time.AfterFunc(movedGrace, func() {
		for _, s := range staleMux {
			s.m.endMoved(s.ids, moved)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range stale {
			if _, waiting := f.calls[c]; waiting && c.conn != nil {
				c.moved = moved
				c.conn.SetDeadline(time.Now()) // its read fails now
			}
		}
	})
}

// status asks the peer at addr about its replicas, and about this node
// (self and incarnation), waiting no longer than timeout.
func (f *forwarder) status(addr, self, incarnation string, timeout time.Duration) (nodeStatus, error) {
	frame := appendString(appendString([]byte{frameStatus}, self), incarnation)
	reply, _, err := f.call(nil, addr, frame, time.Now().Add(timeout))
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
	reply, sent, err := f.call(nil, addr, append([]byte{frameCatalogue}, data...), deadline)
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

// call sends one frame to addr and reads the answer, by deadline; sent
// reports whether the frame may have reached the peer. c, when not nil,
// registers the exchange so that leaderMoved can end it; c.moved then says
// why it ended early.
func (f *forwarder) call(c *forwardCall, addr string, frame []byte, deadline time.Time) (reply []byte, sent bool, err error) {
	conn, err := f.get(addr)
	if err != nil {
		return nil, false, err
	}
	if c != nil && c.send != nil && !c.send() {
		f.put(addr, conn)
		return nil, false, errGivenUp
	}
	f.mu.Lock()
	if c != nil {
		c.conn = conn.Conn
		f.calls[c] = struct{}{}
	}
	f.mu.Unlock()
	conn.SetDeadline(deadline)
	written, err := writeFrameCounted(conn, frame)
	if err == nil {
		reply, err = readFrame(conn.rd)
	}
	f.mu.Lock()
	delete(f.calls, c) // leaderMoved no longer touches conn
	f.mu.Unlock()
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
// frame written into it is lost, yet its loss would look like a request
// that may have been counted.
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
		if stillOpen(conn.Conn) {
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
