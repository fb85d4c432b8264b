package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
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
	frameCommands byte = 'C'
	frameStatus   byte = 'S'
	maxFrame           = 64 << 20
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
		conn.SetWriteDeadline(time.Now().Add(frameTimeout))
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
	ctx, cancel := context.WithTimeout(context.Background(), h.requestTimeout())
	defer cancel()
	results, err := Do(ctx, submitFunc(func(shard int, r *Request) {
		r.begin(shard, nil, h.requestTimeout())
		h.submitLocal(shard, r)
	}), shard, cmds...)
	if errors.Is(err, context.DeadlineExceeded) {
		err = retryError(shard, "", ErrMayHaveBeenCounted, "no answer within the request timeout of the node it was forwarded to")
	}
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
