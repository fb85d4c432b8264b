package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Forwarding lets a node answer a command for a shard another node leads:
// the parsed commands go to the leader over the bus and the results come
// back, so clients that know nothing of clusters can use any node. A
// forwarding connection carries one frame at a time each way:
//
//	request   uvarint length, then 'C' uvarint shard, batch (appendBatch)
//	          or 'S' (status: this node's replicas)
//	response  uvarint length, then 0 and the results (appendResult each,
//	          or for 'S' uvarint count, then per shard the applied index
//	          and the leader's id, "" where unknown or not held),
//	          or 3 and an error (codec.go's appendError, after its tag),
//	          or 2 and the id of the node that leads the shard (the request
//	          was not applied: ask that node); 1 and an error's text is
//	          what releases before typed errors answer

// The first byte of a response.
const (
	replyOK     byte = 0
	replyText   byte = 1
	replyLeader byte = 2
	replyError  byte = 3
)

const (
	frameCommands  byte = 'C'
	frameStatus    byte = 'S'
	maxFrame            = 64 << 20
	forwardPool         = 8 // idle connections kept per peer
	forwardTimeout      = 10 * time.Second
)

// forwardHandler is what the forwarding server needs from its node.
type forwardHandler interface {
	// submitLocal applies r on this node's replica if it leads the shard, and
	// fails it with ErrNotApplied otherwise (it never forwards again).
	submitLocal(shard int, r *Request)
	// status describes this node's replica of each shard.
	status() []shardStatus
	// leaderHint names the shard's leader when this node knows it is
	// another node ("" otherwise).
	leaderHint(shard int) string
}

// shardStatus is what a node says of its replica of one shard.
type shardStatus struct {
	applied uint64 // Raft index applied; 0 where it holds no replica
	leader  string // the leader's node id; "" when unknown or not held
}

// serveForward answers frames on one forwarding connection until it closes.
func serveForward(conn net.Conn, h forwardHandler) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	var out []byte
	for {
		frame, err := readFrame(rd)
		if err != nil {
			return
		}
		out = out[:0]
		switch {
		case len(frame) > 0 && frame[0] == frameCommands:
			out = answerCommands(out, frame[1:], h)
		case len(frame) > 0 && frame[0] == frameStatus:
			out = append(out, replyOK)
			status := h.status()
			out = binary.AppendUvarint(out, uint64(len(status)))
			for _, st := range status {
				out = binary.AppendUvarint(out, st.applied)
				out = appendString(out, st.leader)
			}
		default:
			return
		}
		conn.SetWriteDeadline(time.Now().Add(forwardTimeout))
		if err := writeFrame(conn, out); err != nil {
			return
		}
	}
}

// answerCommands applies a forwarded batch and encodes its answer.
func answerCommands(out, frame []byte, h forwardHandler) []byte {
	d := wire{b: frame}
	shard := int(d.uvarint())
	if d.err != nil {
		return appendError(out, replyError, d.err)
	}
	_, cmds, err := decodeBatch(d.b, nil)
	if err != nil {
		return appendError(out, replyError, err)
	}
	// No re-route here: the node that forwarded the request re-routes it.
	results, err := Do(context.Background(), submitFunc(h.submitLocal), shard, cmds...)
	if errors.Is(err, ErrNotApplied) {
		if hint := h.leaderHint(shard); hint != "" {
			return append(append(out, replyLeader), hint...)
		}
	}
	if err != nil {
		return appendError(out, replyError, err)
	}
	out = append(out, replyOK)
	for i := range results {
		out = appendResult(out, &results[i])
	}
	return out
}

// forwarder sends requests to peers, keeping a few idle connections to each.
type forwarder struct {
	dialer busDialer
	mu     sync.Mutex
	idle   map[string][]net.Conn
}

func newForwarder(dialer busDialer) *forwarder {
	return &forwarder{dialer: dialer, idle: make(map[string][]net.Conn)}
}

// forward applies r's commands on shard at the peer whose bus is addr, and
// fills r.Results or r.Err. A request whose fate is unknown (the connection
// broke after it was sent) fails with ErrMayHaveBeenCounted. When the peer
// does not lead the shard but knows who does, r fails with ErrNotApplied
// and the leader's id is returned.
func (f *forwarder) forward(addr string, shard int, r *Request) (leaderHint string) {
	frame := []byte{frameCommands}
	frame = binary.AppendUvarint(frame, uint64(shard))
	frame = appendBatch(frame, 0, []*Request{r})
	reply, sent, err := f.call(addr, frame)
	if err != nil {
		if sent {
			r.Err = ErrMayHaveBeenCounted
		} else {
			r.Err = ErrNotApplied
		}
		return ""
	}
	d := wire{b: reply}
	switch d.byte() {
	case replyOK:
	case replyLeader:
		r.Err = ErrNotApplied
		return string(d.b)
	case replyError:
		r.Err = d.error()
		return ""
	default: // replyText, from a release before typed errors
		r.Err = PeerReply(d.b)
		return ""
	}
	for i := range r.Results {
		r.Results[i] = d.result()
	}
	if d.err != nil {
		r.Err = &Failure{fmt.Sprintf("bad reply from %s: %v", addr, d.err)}
	}
	return ""
}

// status asks the peer at addr about its replicas.
func (f *forwarder) status(addr string) ([]shardStatus, error) {
	reply, _, err := f.call(addr, []byte{frameStatus})
	if err != nil {
		return nil, err
	}
	d := wire{b: reply}
	if d.byte() != replyOK {
		return nil, fmt.Errorf("%w: status refused by %s", errBadEntry, addr)
	}
	n := d.uvarint()
	if n > 1<<16 {
		return nil, errBadEntry
	}
	out := make([]shardStatus, n)
	for i := range out {
		out[i] = shardStatus{applied: d.uvarint(), leader: string(d.bytes(256))}
	}
	return out, d.err
}

// call sends one frame and reads the answer; sent reports whether the frame
// may have reached the peer.
func (f *forwarder) call(addr string, frame []byte) (reply []byte, sent bool, err error) {
	conn, err := f.get(addr)
	if err != nil {
		return nil, false, err
	}
	conn.SetDeadline(time.Now().Add(forwardTimeout))
	if err := writeFrame(conn, frame); err != nil {
		conn.Close()
		return nil, true, err
	}
	reply, err = readFrame(bufio.NewReader(conn))
	if err != nil {
		conn.Close()
		return nil, true, err
	}
	f.put(addr, conn)
	return reply, true, nil
}

// get returns an idle connection to addr that is still open, or a new one.
// An idle connection the peer closed (it restarted, say) must not be used: a
// frame written into it is lost, yet its loss would look like a request
// that may have been counted.
func (f *forwarder) get(addr string) (net.Conn, error) {
	for {
		f.mu.Lock()
		conns := f.idle[addr]
		if len(conns) == 0 {
			f.mu.Unlock()
			return f.dialer.open(addr, streamForward, 0, 2*time.Second)
		}
		conn := conns[len(conns)-1]
		f.idle[addr] = conns[:len(conns)-1]
		f.mu.Unlock()
		if stillOpen(conn) {
			return conn, nil
		}
		conn.Close()
	}
}

func (f *forwarder) put(addr string, conn net.Conn) {
	conn.SetDeadline(time.Time{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.idle[addr]) >= forwardPool {
		conn.Close()
		return
	}
	f.idle[addr] = append(f.idle[addr], conn)
}

// close drops the idle connections.
func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for addr, conns := range f.idle {
		for _, c := range conns {
			c.Close()
		}
		delete(f.idle, addr)
	}
}

func writeFrame(w io.Writer, payload []byte) error {
	b := binary.AppendUvarint(make([]byte, 0, len(payload)+10), uint64(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

func readFrame(rd *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(rd)
	if err != nil {
		return nil, err
	}
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(rd, b)
	return b, err
}
