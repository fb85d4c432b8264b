package cluster

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/peek"
	"github.com/rlserver/rlserver/internal/wire"
)

// A control connection (streamControl, transport.go) carries the control
// plane's calls between nodes, rare next to forwarded requests, one frame
// at a time each way (writeFrame):
//
//	request   'S' (status: this node's replicas), the asker's id and
//	          incarnation (strings: uvarint length, bytes),
//	          or 'A' and a catalogue change (the entry's bytes)
//	response  0 and, for 'S', uvarint count, then per shard the applied
//	          index and the leader's id ("" where unknown or not held),
//	          then 1, this node's incarnation, its catalogue's index, the
//	          verdict on the asker (0, or 1 and an error), and per shard a
//	          flags byte (1: it holds a replica, 2: it should not lead the
//	          shard) and the commit index, then 2 and its wall clock (Unix
//	          ms, uvarint); for 'A' the index the change was committed at;
//	          or 3 and an error (codec.go's appendRequestError),
//	          or 2 and the id of the catalogue's leader (the change was not
//	          applied: ask that node)

const (
	frameStatus    byte = 'S'
	frameCatalogue byte = 'A'
	// controlPool is how many idle control connections are kept per peer.
	// A call that finds none dials one; one that finds the pool full is
	// closed after its answer.
	controlPool = 64
	// dialTimeout bounds opening a connection to a peer.
	dialTimeout = 2 * time.Second
)

// appendStatus encodes st as the answer to 'S'.
func appendStatus(out []byte, st NodeStatus) []byte {
	out = append(out, replyOK)
	out = binary.AppendUvarint(out, uint64(len(st.Shards)))
	for _, s := range st.Shards {
		out = binary.AppendUvarint(out, s.Applied)
		out = wire.AppendString(out, s.Leader)
	}
	out = append(out, 1)
	out = wire.AppendString(out, st.Incarnation)
	out = binary.AppendUvarint(out, st.Catalogue)
	if st.Verdict != nil {
		out = appendError(out, 1, st.Verdict)
	} else {
		out = append(out, 0)
	}
	for _, s := range st.Shards {
		var flags byte
		if s.Held {
			flags |= 1
		}
		if s.Unfit {
			flags |= 2
		}
		out = append(out, flags)
		out = binary.AppendUvarint(out, s.Commit)
	}
	out = append(out, 2)
	return binary.AppendUvarint(out, uint64(max(st.Wall, 0)))
}

// decodeStatus reads an answer to 'S' after its first byte.
func decodeStatus(d *reader) (NodeStatus, error) {
	n := d.Uvarint()
	if n > 1<<16 {
		return NodeStatus{}, errBadEntry
	}
	st := NodeStatus{Shards: make([]ShardStatus, n)}
	for i := range st.Shards {
		st.Shards[i] = ShardStatus{Applied: d.Uvarint(), Leader: string(d.Bytes(256))}
	}
	if d.Byte() != 1 {
		d.Fail("status without its incarnation")
	}
	st.Incarnation = string(d.Bytes(64))
	st.Catalogue = d.Uvarint()
	if d.Byte() == 1 {
		st.Verdict = d.error()
	}
	for i := range st.Shards {
		flags := d.Byte()
		st.Shards[i].Held = flags&1 != 0
		st.Shards[i].Unfit = flags&2 != 0
		st.Shards[i].Commit = d.Uvarint()
	}
	// A release before the clock check ends here.
	if d.Len() > 0 && d.Byte() == 2 {
		st.Wall = int64(min(d.Uvarint(), math.MaxInt64))
	}
	return st, d.Err()
}

// serveControl answers frames on one control connection until it closes.
func serveControl(conn net.Conn, n *RaftShards) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	var out []byte
	for {
		frame, err := readFrame(rd)
		if err != nil || len(frame) == 0 {
			return
		}
		out = out[:0]
		switch frame[0] {
		case frameStatus:
			d := newReader(frame[1:])
			asker, incarnation := string(d.Bytes(256)), string(d.Bytes(64))
			if d.Err() != nil {
				return
			}
			out = appendStatus(out, n.status(asker, incarnation))
		case frameCatalogue:
			index, leader, err := n.ctl.CommitForwarded(frame[1:])
			switch {
			case err != nil:
				out = appendRequestError(out, err)
			case leader != "":
				out = append(append(out, replyLeader), leader...)
			default:
				out = binary.AppendUvarint(append(out, replyOK), index)
			}
		default:
			return
		}
		conn.SetWriteDeadline(time.Now().Add(frameTimeout))
		if err := writeFrame(conn, out); err != nil {
			return
		}
	}
}

// AskStatus asks the node at addr (a bus address) about its replicas and
// about this node, whose data directory is incarnation, waiting no longer
// than timeout. The answer's Offset is the node's clock against this
// node's.
func (n *RaftShards) AskStatus(addr, incarnation string, timeout time.Duration) (NodeStatus, error) {
	frame := wire.AppendString(wire.AppendString([]byte{frameStatus}, n.cfg.Self.ID), incarnation)
	sent, sentWall := time.Now(), n.cfg.Clock.Wall()
	reply, _, err := n.control.call(addr, frame, sent.Add(timeout))
	rtt := time.Since(sent)
	if err != nil {
		return NodeStatus{}, err
	}
	d := newReader(reply)
	if d.Byte() != replyOK {
		return NodeStatus{}, fmt.Errorf("%w: status refused by %s", errBadEntry, addr)
	}
	st, err := decodeStatus(d)
	if err == nil && st.Wall > 0 {
		o := measureOffset(addr, st.Wall, sentWall, sent, rtt)
		st.Offset = &o
	}
	return st, err
}

// SendCatalogueOp sends a catalogue change (its entry's bytes) to the
// catalogue's leader at addr: the index it was committed at, or the id of
// the leader to ask instead (the error then wraps ErrNotApplied), or the
// error that refused it. A change that may have reached the leader without
// an answer ends with ErrMayHaveBeenCounted.
func (n *RaftShards) SendCatalogueOp(addr string, op []byte, deadline time.Time) (index uint64, leader string, err error) {
	reply, sent, err := n.control.call(addr, append([]byte{frameCatalogue}, op...), deadline)
	if err != nil {
		if !sent {
			return 0, "", fmt.Errorf("the catalogue's leader is unreachable: %v: %w", err, ErrNotApplied)
		}
		return 0, "", fmt.Errorf("the catalogue's leader did not answer: %v: %w", err, ErrMayHaveBeenCounted)
	}
	d := newReader(reply)
	switch d.Byte() {
	case replyOK:
		index = d.Uvarint()
		return index, "", d.Err()
	case replyLeader:
		return 0, string(d.Rest()), fmt.Errorf("the catalogue's leader moved: %w", ErrNotApplied)
	case replyError:
		return 0, "", d.requestError(addr)
	}
	return 0, "", fmt.Errorf("%w: catalogue reply from %s", errBadEntry, addr)
}

// controlCalls makes control calls to other nodes, over connections it
// keeps idle between calls, a few per peer.
type controlCalls struct {
	dialer busDialer
	mu     sync.Mutex
	idle   map[string][]*peerConn
	closed bool
}

// peerConn is a control connection and the reader of its answers, kept
// together so that a pooled connection reuses its buffer. Answers are read
// whole before the connection goes back to the pool: nothing is left
// buffered.
type peerConn struct {
	net.Conn
	rd *bufio.Reader
}

func newControlCalls(dialer busDialer) *controlCalls {
	return &controlCalls{dialer: dialer, idle: make(map[string][]*peerConn)}
}

// call sends one frame to addr on a control connection and reads the
// answer, by deadline; sent reports whether the frame may have reached the
// peer.
func (c *controlCalls) call(addr string, frame []byte, deadline time.Time) (reply []byte, sent bool, err error) {
	conn, err := c.get(addr)
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
		// acted on it, and its caller may safely send it again.
		return nil, written > 0, err
	}
	c.put(addr, conn)
	return reply, true, nil
}

// get returns an idle connection to addr that is still open, or a new one.
// An idle connection the peer closed (it restarted, say) must not be used: a
// frame written into it is lost, yet its loss would look like a change that
// may have been committed.
func (c *controlCalls) get(addr string) (*peerConn, error) {
	for {
		c.mu.Lock()
		conns := c.idle[addr]
		if len(conns) == 0 {
			c.mu.Unlock()
			conn, err := c.dialer.open(addr, streamControl, 0, dialTimeout)
			if err != nil {
				return nil, err
			}
			return &peerConn{Conn: conn, rd: bufio.NewReader(conn)}, nil
		}
		conn := conns[len(conns)-1]
		c.idle[addr] = conns[:len(conns)-1]
		c.mu.Unlock()
		if peek.StillOpen(conn.Conn) {
			return conn, nil
		}
		conn.Close()
	}
}

// put keeps conn idle for the next call to addr, unless the pool is full
// or closed.
func (c *controlCalls) put(addr string, conn *peerConn) {
	conn.SetDeadline(time.Time{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle[addr]) >= controlPool {
		conn.Close()
		return
	}
	c.idle[addr] = append(c.idle[addr], conn)
}

// close drops the idle connections.
func (c *controlCalls) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for addr, conns := range c.idle {
		for _, conn := range conns {
			conn.Close()
		}
		delete(c.idle, addr)
	}
}
