package cluster

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// forwarder sends requests to the nodes that lead their shards (see
// forward.go for the frames). To each peer it keeps one multiplexed
// connection (muxconn.go) that carries every request forwarded to it.
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
	muxes  map[string]*muxConn // by peer address
	closed bool
}

const (
	// movedGrace is how long a node that lost a shard's leadership has to
	// answer the requests it was forwarded before they are given up.
	movedGrace = 200 * time.Millisecond
)

// newForwarder returns a forwarder that opens its connections with dialer
// and gives the requests it cannot answer to ended.
func newForwarder(dialer busDialer, ended func(r *Request, leader *Member, hint string, err error)) *forwarder {
	return &forwarder{
		dialer: dialer, ended: ended,
		muxes: make(map[string]*muxConn),
	}
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
	d := newReader(reply)
	switch d.Byte() {
	case replyOK:
	case replyLeader:
		hint = string(d.Rest())
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
	if d.Err() != nil {
		r.answer(&Failure{fmt.Sprintf("bad reply from %s: %v", leader.ID, d.Err())})
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

// close breaks the multiplexed connections.
func (f *forwarder) close() {
	f.mu.Lock()
	f.closed = true
	muxes := slices.Collect(maps.Values(f.muxes))
	f.mu.Unlock()
	for _, m := range muxes {
		m.broke(ErrShuttingDown)
	}
}
