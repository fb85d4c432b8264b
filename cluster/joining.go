package cluster

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/rlserver/rlserver/internal/wire"
)

// Before a node takes part in any Raft group, it asks the cluster about
// itself on the bus's joining stream, which any node may open, the
// cluster's id not being known yet: whether the cluster knows it ("hello"),
// to record it ("vouch", a new initial member), or to be added to it
// ("join"). The control plane decides (ControlPlane's Hello, Vouch and
// Join, cluster/placement); the frames are these, as forwarding frames
// them (forward.go):
//
//	request   'H' id incarnation            (strings: uvarint length, bytes)
//	          'V' id incarnation
//	          'J' the node's NodeInfo as JSON
//	response  0, then for 'H' and 'V': uvarint catalogue index (0: none
//	          committed), the cluster's id, uvarint shards, the verdict on
//	          the asker (0, or 1 and an error as codec.go's appendError
//	          writes it), and 1 if the node vouches for it, else 0 (a
//	          release before vouching sends no such byte, and closes the
//	          connection on a 'V');
//	          for 'J': the catalogue as JSON
//	          or 3 and an error

const (
	streamJoin byte = 'J'
	frameHello byte = 'H'
	frameVouch byte = 'V'
	frameJoin  byte = 'J'
)

// serveJoining answers frames on one joining connection until it closes.
func serveJoining(conn net.Conn, ctl ControlPlane) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	for {
		frame, err := readFrame(rd)
		if err != nil || len(frame) == 0 {
			return
		}
		var out []byte
		switch frame[0] {
		case frameHello:
			out = answerHello(frame[1:], ctl.Hello)
		case frameVouch:
			out = answerHello(frame[1:], ctl.Vouch)
		case frameJoin:
			out = answerJoin(frame[1:], ctl)
		default:
			return
		}
		conn.SetWriteDeadline(time.Now().Add(frameTimeout))
		if err := writeFrame(conn, out); err != nil {
			return
		}
	}
}

// answerHello encodes what answer (the control plane's Hello or Vouch)
// says of the node a hello or vouch frame names.
func answerHello(frame []byte, answer func(id, incarnation string) HelloReply) []byte {
	d := newReader(frame)
	id, incarnation := string(d.Bytes(256)), string(d.Bytes(256))
	if d.Err() != nil {
		return appendError(nil, replyError, d.Err())
	}
	r := answer(id, incarnation)
	out := binary.AppendUvarint([]byte{replyOK}, r.Index)
	out = wire.AppendString(out, r.Cluster.String())
	out = binary.AppendUvarint(out, uint64(r.Shards))
	if r.Verdict != nil {
		out = appendError(out, 1, r.Verdict)
	} else {
		out = append(out, 0)
	}
	if r.Vouched {
		return append(out, 1)
	}
	return append(out, 0)
}

// answerJoin has ctl add the node a join frame describes, and encodes the
// catalogue after it.
func answerJoin(frame []byte, ctl ControlPlane) []byte {
	var node NodeInfo
	if err := json.Unmarshal(frame, &node); err != nil {
		return appendError(nil, replyError, fmt.Errorf("%w: %v", errBadEntry, err))
	}
	cat, err := ctl.Join(node)
	if err != nil {
		return appendError(nil, replyError, err)
	}
	b, _ := json.Marshal(cat)
	return append([]byte{replyOK}, b...)
}

// Joiner asks the members of a cluster about a node that does not take
// part in it yet, over their joining streams.
type Joiner struct {
	dialer busDialer
}

// NewJoiner returns a Joiner that dials with dial, over mutual TLS when
// sec is not nil.
func NewJoiner(dial Dialer, sec *BusTLS) *Joiner {
	return &Joiner{dialer: newBusDialer(dial, ClusterID{}, sec)}
}

// Hello asks the node at addr (a bus address) what the cluster knows of
// node id with incarnation.
func (j *Joiner) Hello(addr, id, incarnation string, timeout time.Duration) (HelloReply, error) {
	return j.hello(frameHello, addr, id, incarnation, timeout)
}

// Vouch asks the node at addr, an initial member of the cluster being
// created, to vouch for node id with incarnation: to record it, unless it
// knows id with another incarnation (the Verdict then says so).
func (j *Joiner) Vouch(addr, id, incarnation string, timeout time.Duration) (HelloReply, error) {
	return j.hello(frameVouch, addr, id, incarnation, timeout)
}

// hello sends a hello or vouch frame and reads the reply.
func (j *Joiner) hello(kind byte, addr, id, incarnation string, timeout time.Duration) (HelloReply, error) {
	frame := wire.AppendString(wire.AppendString([]byte{kind}, id), incarnation)
	body, err := j.call(addr, frame, timeout)
	if err != nil {
		return HelloReply{}, err
	}
	d := newReader(body)
	r := HelloReply{Index: d.Uvarint()}
	cluster := string(d.Bytes(64))
	r.Shards = int(d.Uvarint())
	if d.Byte() == 1 {
		r.Verdict = d.error()
	}
	if d.Err() == nil && d.Len() > 0 { // a release before vouching sends no more
		r.Vouched = d.Byte() == 1
	}
	if d.Err() != nil {
		return HelloReply{}, d.Err()
	}
	if r.Cluster, err = ParseClusterID(cluster); err != nil {
		return HelloReply{}, fmt.Errorf("%w: a hello reply from %s: %v", errBadEntry, addr, err)
	}
	return r, nil
}

// Join asks the node at addr to add node to its cluster, and returns the
// catalogue it answered with. A refusal is a *MembershipError.
func (j *Joiner) Join(addr string, node NodeInfo, timeout time.Duration) (*Catalogue, error) {
	data, _ := json.Marshal(node)
	body, err := j.call(addr, append([]byte{frameJoin}, data...), timeout)
	if err != nil {
		return nil, err
	}
	var c *Catalogue
	if err := json.Unmarshal(body, &c); err != nil || c == nil {
		return nil, fmt.Errorf("%w: a catalogue from %s that does not decode: %v", errBadEntry, addr, err)
	}
	return c, nil
}

// call sends one frame on a joining connection to addr and returns the
// answer after its first byte, which must be replyOK (an error reply is
// returned as the error).
func (j *Joiner) call(addr string, frame []byte, timeout time.Duration) ([]byte, error) {
	conn, err := j.dialer.open(addr, streamJoin, 0, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if err := writeFrame(conn, frame); err != nil {
		return nil, err
	}
	reply, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		return nil, err
	}
	d := newReader(reply)
	switch d.Byte() {
	case replyOK:
		return d.Rest(), nil
	case replyError:
		if err := d.error(); d.Err() == nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: a joining reply from %s", errBadEntry, addr)
}
