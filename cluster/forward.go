package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Forwarding lets a node answer a command for a shard another node leads:
// the parsed commands go to the leader over the bus and the results come
// back, so clients that know nothing of clusters can use any node. A
// multiplexed forwarding connection (streamForwardMux, transport.go)
// carries commands, as many at a time as are in flight, each way. The node accepting it first answers the header with one byte,
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

// The first byte of a response.
const (
	replyOK     byte = 0
	replyLeader byte = 2
	replyError  byte = 3
)

const (
	frameCommands byte = 'C'
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
	// leaderHint names the shard's leader when this node knows it is
	// another node ("" otherwise).
	leaderHint(shard int) string
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

// writeFrame writes payload after its uvarint length, as the control and
// joining streams frame what they carry.
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

// readFrame reads what writeFrame wrote.
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
