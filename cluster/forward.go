package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Forwarding lets a node answer a command for a shard another node leads:
// the parsed commands go to the leader over the bus and the results come
// back, so clients that know nothing of clusters can use any node. There
// are two streams (transport.go). A multiplexed forwarding connection
// (streamForwardMux) carries commands, as many at a time as are in flight,
// each way. The node accepting it first answers the header with one byte,
// muxVersion; then
//
//	request   uint32 length (big endian) of what follows, uvarint id (the
//	          sender's, unique on the connection), then 'C' uvarint shard,
//	          batch (appendBatch)
//	response  uint32 length, the request's id, then 0 and the results
//	          (appendResult each), or 3 and an error (codec.go's
//	          appendRequestError: appendError after its tag, then a
//	          sentinel's text), or 2 and the id of the node that leads the
//	          shard (the request was not applied: ask that node)
//
// Requests are applied as they arrive, not one after the other, and answered
// as they complete, in any order; frames are written back to back, several
// in one write. The length is fixed-size so that a frame can be encoded in
// place, in the sender's queue.
//
// A control connection (streamForward) carries the rare calls, one frame at
// a time each way:
//
//	request   uvarint length, then 'S' (status: this node's replicas), the
//	          asker's id and incarnation,
//	          or 'A' and a catalogue change (catalogueops.go)
//	response  uvarint length, then 0 and, for 'S', uvarint count, then per
//	          shard the applied index and the leader's id ("" where unknown
//	          or not held), then 1, this node's incarnation, its catalogue's
//	          index, the verdict on the asker (0, or 1 and an error), and per
//	          shard a flags byte (1: it holds a replica) and the commit
//	          index; for 'A' the index the change was committed at;
//	          or 3 and an error, or 2 and the id of the catalogue's leader
//	          (the change was not applied: ask that node)

// The first byte of a response.
const (
	replyOK     byte = 0
	replyLeader byte = 2
	replyError  byte = 3
)

const (
	frameCommands  byte = 'C'
	frameStatus    byte = 'S'
	frameCatalogue byte = 'A'
	maxFrame            = 64 << 20
	// frameTimeout bounds writing an answer, and a status call.
	frameTimeout = 10 * time.Second
)

// forwardHandler is what the forwarding server needs from its node.
type forwardHandler interface {
	// submitLocal applies r, begun, on this node's replica if it leads the
	// shard, and fails it with ErrNotApplied otherwise (it never forwards
	// again).
	submitLocal(shard int, r *Request)
	// requestTimeout bounds how long a forwarded request may wait for its
	// answer here.
	requestTimeout() time.Duration
	// status describes this node's replicas and what it thinks of the
	// asker (its id and incarnation).
	status(asker, incarnation string) nodeStatus
	// applyCatalogueOp commits a catalogue change when this node leads the
	// catalogue group, or names the node that does.
	applyCatalogueOp(data []byte) (index uint64, leader string, err error)
	// leaderHint names the shard's leader when this node knows it is
	// another node ("" otherwise).
	leaderHint(shard int) string
}

// shardStatus is what a node says of its replica of one shard.
type shardStatus struct {
	applied uint64 // Raft index applied; 0 where it holds no replica
	leader  string // the leader's node id; "" when unknown or not held
	held    bool   // it holds a replica (an empty one, at first)
	commit  uint64 // Raft commit index
}

// nodeStatus is what a node says of itself and of the node that asks.
type nodeStatus struct {
	shards      []shardStatus
	incarnation string // its data directory's
	catalogue   uint64 // its catalogue's index
	verdict     error  // why the cluster refuses the asker, as this node knows it
}

// appendStatus encodes st as the answer to 'S'.
func appendStatus(out []byte, st nodeStatus) []byte {
	out = append(out, replyOK)
	out = binary.AppendUvarint(out, uint64(len(st.shards)))
	for _, s := range st.shards {
		out = binary.AppendUvarint(out, s.applied)
		out = appendString(out, s.leader)
	}
	out = append(out, 1)
	out = appendString(out, st.incarnation)
	out = binary.AppendUvarint(out, st.catalogue)
	if st.verdict != nil {
		out = appendError(out, 1, st.verdict)
	} else {
		out = append(out, 0)
	}
	for _, s := range st.shards {
		var flags byte
		if s.held {
			flags |= 1
		}
		out = append(out, flags)
		out = binary.AppendUvarint(out, s.commit)
	}
	return out
}

// decodeStatus reads an answer to 'S' after its first byte.
func decodeStatus(d *wire) (nodeStatus, error) {
	n := d.uvarint()
	if n > 1<<16 {
		return nodeStatus{}, errBadEntry
	}
	st := nodeStatus{shards: make([]shardStatus, n)}
	for i := range st.shards {
		st.shards[i] = shardStatus{applied: d.uvarint(), leader: string(d.bytes(256))}
	}
	if d.byte() != 1 {
		d.fail("status without its incarnation")
	}
	st.incarnation = string(d.bytes(64))
	st.catalogue = d.uvarint()
	if d.byte() == 1 {
		st.verdict = d.error()
	}
	for i := range st.shards {
		flags := d.byte()
		st.shards[i].held = flags&1 != 0
		st.shards[i].commit = d.uvarint()
	}
	return st, d.err
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
		case len(frame) > 0 && frame[0] == frameStatus:
			d := wire{b: frame[1:]}
			asker, incarnation := string(d.bytes(256)), string(d.bytes(64))
			if d.err != nil {
				return
			}
			out = appendStatus(out, h.status(asker, incarnation))
		case len(frame) > 0 && frame[0] == frameCatalogue:
			index, leader, err := h.applyCatalogueOp(frame[1:])
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

// appendCommandsReply encodes the answer to a forwarded batch for shard:
// its results, or err (ErrNotApplied as the name of the shard's leader,
// when this node knows another node leads it).
func appendCommandsReply(out []byte, shard int, results []engine.Result, err error, h forwardHandler) []byte {
	if errors.Is(err, ErrNotApplied) {
		if hint := h.leaderHint(shard); hint != "" {
			return append(append(out, replyLeader), hint...)
		}
	}
	if err != nil {
		return appendRequestError(out, err)
	}
	out = append(out, replyOK)
	for i := range results {
		out = appendResult(out, &results[i])
	}
	return out
}

func writeFrame(w io.Writer, payload []byte) error {
	_, err := writeFrameCounted(w, payload)
	return err
}

// writeFrameCounted is writeFrame, also reporting how many bytes the write
// took: none, and the peer cannot have received any of the frame (a write
// past its deadline, say).
func writeFrameCounted(w io.Writer, payload []byte) (int, error) {
	b := binary.AppendUvarint(make([]byte, 0, len(payload)+10), uint64(len(payload)))
	return w.Write(append(b, payload...))
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
