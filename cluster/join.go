package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Before a node takes part in any Raft group, it makes sure the cluster
// will have it: a node never votes under an identity it has lost.
//
//   - A node started with --join asks any member to add it (a "join" on the
//     bus's joining stream, which any node may open, the cluster's id not
//     being known yet): the member commits the join in the catalogue, and
//     answers with the catalogue, from which the node learns the cluster's
//     id, its shard count and its members. A join is idempotent.
//   - A node whose data directory is new, started with --cluster, asks the
//     other initial members about itself ("hello") before it bootstraps: if
//     the cluster already exists and knows its id with another data
//     directory, it was wiped and must not come back under that id; if the
//     cluster exists and does not list it, it must join instead.
//   - A node restarted on its data directory asks the same, briefly, and
//     stops if the cluster has forgotten it; the health poll (health.go)
//     asks again while it runs.
//
// The joining stream carries frames as forwarding does (forward.go):
//
//	request   'H' id incarnation            (strings: uvarint length, bytes)
//	          'J' the node's NodeInfo as JSON
//	response  0, then for 'H': uvarint catalogue index (0: none committed),
//	          the cluster's id, uvarint shards, and the verdict on the asker
//	          (0, or 1 and an error as codec.go's appendError writes it);
//	          for 'J': the catalogue as JSON
//	          or 3 and an error

const (
	streamJoin byte = 'J'
	frameHello byte = 'H'
	frameJoin  byte = 'J'
)

// helloReply is what a node answers about the asker.
type helloReply struct {
	index   uint64 // its committed catalogue's index, 0 before the first
	cluster string // the cluster's id
	shards  int
	verdict error // why the cluster refuses the asker; nil when it admits it
}

// serveJoining answers frames on one joining connection until it closes.
func serveJoining(conn net.Conn, n *RaftShards) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	for {
		frame, err := readFrame(rd)
		if err != nil || len(frame) == 0 {
			return
		}
		var out []byte
		d := wire{b: frame[1:]}
		switch frame[0] {
		case frameHello:
			id, incarnation := string(d.bytes(256)), string(d.bytes(256))
			out = n.answerHello(id, incarnation, d.err)
		case frameJoin:
			out = n.answerJoin(frame[1:])
		default:
			return
		}
		conn.SetWriteDeadline(time.Now().Add(frameTimeout))
		if err := writeFrame(conn, out); err != nil {
			return
		}
	}
}

// answerHello encodes what this node knows of node id with incarnation.
func (n *RaftShards) answerHello(id, incarnation string, decodeErr error) []byte {
	if decodeErr != nil {
		return appendError(nil, replyError, decodeErr)
	}
	out := []byte{replyOK}
	c := n.committedCatalogue()
	if c == nil {
		out = binary.AppendUvarint(out, 0)
		out = appendString(out, n.clusterID())
		out = binary.AppendUvarint(out, uint64(n.cfg.Shards))
		return append(out, 0)
	}
	out = binary.AppendUvarint(out, c.Index)
	out = appendString(out, c.Cluster)
	out = binary.AppendUvarint(out, uint64(c.Shards))
	verdict := c.admits(id, incarnation)
	if verdict == nil && c.Node(id) == nil {
		verdict = refused(MemberUnknown, "the cluster already exists and node %s is not a member: add it with --join", id)
	}
	if verdict != nil {
		n.refusedPeer(id, verdict)
		return appendError(out, 1, verdict)
	}
	return append(out, 0)
}

// answerJoin commits a join and encodes the catalogue after it.
func (n *RaftShards) answerJoin(data []byte) []byte {
	var node NodeInfo
	if err := json.Unmarshal(data, &node); err != nil {
		return appendError(nil, replyError, fmt.Errorf("%w: %v", errBadEntry, err))
	}
	cat, err := n.propose(context.Background(), catalogueOp{Op: opJoin, Node: &node})
	if err != nil {
		return appendError(nil, replyError, err)
	}
	n.cfg.Log.Info("node joined the cluster", "node", node.ID, "client", node.Client, "bus", node.Bus)
	b, _ := json.Marshal(cat)
	return append([]byte{replyOK}, b...)
}

// refusedPeer logs, at most once a second, a node the cluster refuses.
func (n *RaftShards) refusedPeer(id string, why error) {
	if now := time.Now().Unix(); n.warnedPeer.Swap(now) != now {
		n.cfg.Log.Warn("refused a node", "node", id, "err", why)
	}
}

// joiningCall sends one frame on a joining connection to addr and returns
// the answer after its first byte, which must be replyOK (an error reply is
// returned as the error).
func joiningCall(dialer busDialer, addr string, frame []byte, timeout time.Duration) ([]byte, error) {
	conn, err := dialer.open(addr, streamJoin, 0, timeout)
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
	d := wire{b: reply}
	switch d.byte() {
	case replyOK:
		return d.b, nil
	case replyError:
		if err := d.error(); d.err == nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: a joining reply from %s", errBadEntry, addr)
}

// hello asks the node at addr what it knows of this node.
func (n *RaftShards) hello(addr string, timeout time.Duration) (helloReply, error) {
	frame := appendString(appendString([]byte{frameHello}, n.cfg.Self.ID), n.cfg.Incarnation)
	body, err := joiningCall(n.joinDialer, addr, frame, timeout)
	if err != nil {
		return helloReply{}, err
	}
	d := wire{b: body}
	r := helloReply{index: d.uvarint(), cluster: string(d.bytes(64)), shards: int(d.uvarint())}
	if d.byte() == 1 {
		r.verdict = d.error()
	}
	return r, d.err
}

// joinTimeout bounds how long a node started with --join tries to reach a
// member that can add it.
const joinTimeout = time.Minute

// join adds this node to the cluster the member at cfg.Join belongs to,
// trying again while the member cannot answer (it is down, or the
// catalogue has no leader), and returns the catalogue it answered with. A
// refusal (a node the cluster knows with another data directory, or has
// forgotten) ends it at once.
func (n *RaftShards) join() (*Catalogue, error) {
	me := NodeInfo{Member: n.cfg.Self, Incarnation: n.cfg.Incarnation}
	data, _ := json.Marshal(me)
	frame := append([]byte{frameJoin}, data...)
	deadline := time.Now().Add(joinTimeout)
	for attempt := 0; ; attempt++ {
		body, err := joiningCall(n.joinDialer, n.cfg.Join, frame, frameTimeout)
		if err == nil {
			var c *Catalogue
			if err := json.Unmarshal(body, &c); err != nil || c == nil {
				return nil, fmt.Errorf("--join %s: a catalogue that does not decode: %v", n.cfg.Join, err)
			}
			return c, nil
		}
		var me *MembershipError
		if errors.As(err, &me) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("--join %s: no member there could add this node within %v: %w", n.cfg.Join, joinTimeout, err)
		}
		if attempt%10 == 0 {
			n.cfg.Log.Info("waiting to join the cluster", "through", n.cfg.Join, "err", err)
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-n.stop:
			return nil, ErrShuttingDown
		}
	}
}

// checkNewMember is asked by a node whose data directory is new, started
// with --cluster, before it bootstraps: it asks the other initial members
// until one that holds the cluster's catalogue admits it as an initial
// member that never started, or a majority of the members (this one
// included) say no cluster exists yet. A cluster that knows this node's id
// with another data directory, or has forgotten it, or does not list it,
// refuses it.
func (n *RaftShards) checkNewMember() error {
	others := make([]Member, 0, len(n.cfg.Members))
	for _, m := range n.cfg.Members {
		if m.ID != n.cfg.Self.ID {
			others = append(others, m)
		}
	}
	majority := len(n.cfg.Members)/2 + 1
	for attempt := 0; ; attempt++ {
		type answer struct {
			r   helloReply
			err error
		}
		answers := make(chan answer, len(others))
		for _, m := range others {
			go func() {
				r, err := n.hello(m.Bus, time.Second)
				answers <- answer{r, err}
			}()
		}
		empty := 1 // this node
		for range others {
			a := <-answers
			switch {
			case a.err != nil:
			case a.r.index == 0:
				empty++
			case a.r.verdict != nil:
				return a.r.verdict
			default:
				return nil // an initial member the cluster still waits for
			}
		}
		if empty >= majority {
			return nil
		}
		if attempt%10 == 0 {
			n.cfg.Log.Info("waiting for the other members to say whether this node is new", "answered", empty-1, "of", len(others))
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-n.stop:
			return ErrShuttingDown
		}
	}
}

// checkRestart is asked by a node restarted on its data directory: the
// first member that answers says whether the cluster still has it. A
// cluster that does not answer cannot say; the health poll asks again.
func (n *RaftShards) checkRestart() error {
	mine := uint64(0)
	if c := n.committedCatalogue(); c != nil {
		mine = c.Index
	}
	var ask []string
	if c := n.Catalogue(); c != nil {
		for _, m := range c.Members() {
			if m.ID != n.cfg.Self.ID {
				ask = append(ask, m.Bus)
			}
		}
	}
	if n.cfg.Join != "" {
		ask = append(ask, n.cfg.Join)
	}
	for _, addr := range ask {
		r, err := n.hello(addr, time.Second)
		if err != nil {
			continue
		}
		if r.verdict != nil && r.index >= mine && !errors.Is(r.verdict, &MembershipError{Code: MemberUnknown}) {
			return r.verdict
		}
		if r.index >= mine {
			return nil
		}
	}
	return nil
}
