package cluster

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// muxServer serves one multiplexed forwarding connection (streamForwardMux,
// forward.go). Its reader submits each request as soon as its frame is read,
// without waiting for the ones before it, so that the requests a peer
// forwards together for a shard reach its proposer together; its writer
// writes the answers as they complete, all those ready in one write.
//
// Every request served signals the one channel done when it is finished.
// A slot is taken per request submitted and given back per signal (or when
// a request is given up, which never signals), so done always has room: a
// shard never blocks on it.
type muxServer struct {
	conn  net.Conn
	h     forwardHandler
	done  chan struct{} // every served request's Done
	slots chan struct{} // one per request that has yet to signal
	quit  chan struct{} // closed when the writer stops
	stop  chan struct{} // closed when the reader stops

	mu       sync.Mutex
	inflight []*servedReq // in arrival order
	free     []*servedReq // to reuse
	timer    *time.Timer  // gives up on requests past their deadlines
	armed    bool
}

// servedReq is one forwarded request being served, and the memory it
// keeps between uses.
type servedReq struct {
	id     uint64
	req    Request
	frame  []byte // its frame, which req's commands alias
	ready  bool   // answered without being submitted, with failed
	failed error
}

// maxServed bounds the requests in flight on one multiplexed connection:
// its reader waits for answers beyond it.
const maxServed = 1024

// serveMux serves a multiplexed forwarding connection until it closes: it
// accepts the stream, then reads and submits requests.
func serveMux(conn net.Conn, h forwardHandler) {
	s := &muxServer{
		conn: conn, h: h,
		done: make(chan struct{}, maxServed), slots: make(chan struct{}, maxServed),
		quit: make(chan struct{}), stop: make(chan struct{}),
		timer: time.NewTimer(time.Hour),
	}
	s.timer.Stop()
	defer close(s.stop)
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(frameTimeout))
	if _, err := conn.Write([]byte{muxVersion}); err != nil {
		return
	}
	go s.write()
	rd := bufio.NewReaderSize(conn, 32<<10)
	for {
		select {
		case s.slots <- struct{}{}:
		case <-s.quit:
			return
		}
		sr := s.get()
		frame, err := readMuxFrame(rd, sr.frame)
		if err != nil {
			return
		}
		sr.frame = frame
		d := newReader(frame)
		sr.id = d.Uvarint()
		if d.Err() != nil || d.Byte() != frameCommands {
			return // not this protocol: nothing to answer
		}
		shard := int(d.Uvarint())
		r := &sr.req
		_, r.Cmds, err = decodeBatch(d.Rest(), r.Cmds[:0])
		if err == nil {
			err = d.Err()
		}
		if err != nil {
			sr.ready, sr.failed = true, err
			s.push(sr, time.Time{})
			s.done <- struct{}{}
			continue
		}
		if cap(r.Results) < len(r.Cmds) {
			r.Results = make([]engine.Result, len(r.Cmds))
		}
		r.Results = r.Results[:len(r.Cmds)]
		// No re-route here: the node that forwarded the request re-routes it.
		r.begin(shard, nil, h.requestTimeout())
		s.push(sr, r.deadline)
		h.submitLocal(shard, r)
	}
}

// get returns a request to fill.
func (s *muxServer) get() *servedReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		sr := s.free[n-1]
		s.free = s.free[:n-1]
		return sr
	}
	// Done is set once: an answer under way may still read it while the
	// request is reused.
	return &servedReq{req: Request{Done: s.done}}
}

// push adds sr to the requests awaiting their answers, deadline (zero: none)
// being when it is to be given up.
func (s *muxServer) push(sr *servedReq, deadline time.Time) {
	s.mu.Lock()
	s.inflight = append(s.inflight, sr)
	if !s.armed && !deadline.IsZero() {
		s.armed = true
		s.timer.Reset(time.Until(deadline))
	}
	s.mu.Unlock()
}

// write writes the answers as they come, until the connection breaks.
func (s *muxServer) write() {
	defer close(s.quit)
	defer s.conn.Close()
	var out []byte
	for {
		expiring := false
		select {
		case <-s.done:
			<-s.slots
			for drained := false; !drained; {
				select {
				case <-s.done:
					<-s.slots
				default:
					drained = true
				}
			}
		case <-s.timer.C:
			expiring = true
		case <-s.stop:
			return
		}
		s.mu.Lock()
		out = s.collect(out[:0], expiring)
		s.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		s.conn.SetWriteDeadline(time.Now().Add(frameTimeout))
		if _, err := s.conn.Write(out); err != nil {
			return
		}
	}
}

// collect appends the answers of the requests finished (and, expiring, of
// those past their deadlines, given up) and keeps the others. Under mu.
func (s *muxServer) collect(out []byte, expiring bool) []byte {
	now := time.Now()
	kept := s.inflight[:0]
	for _, sr := range s.inflight {
		r := &sr.req
		switch {
		case sr.ready:
			out = appendMuxAnswer(out, sr.id, 0, nil, sr.failed, s.h)
			sr.ready, sr.failed = false, nil
			s.free = append(s.free, sr)
		case r.state.Load() == reqDone:
			out = appendMuxAnswer(out, sr.id, r.shard, r.Results, r.Err, s.h)
			s.free = append(s.free, sr)
		case expiring && !now.Before(r.deadline) && r.Expire():
			// The shard may still hold it: it is not reused, and never
			// signals.
			<-s.slots
			err := retryError(r.shard, "", ErrMayHaveBeenCounted, "no answer within the request timeout of the node it was forwarded to")
			out = appendMuxAnswer(out, sr.id, r.shard, nil, err, s.h)
		default:
			kept = append(kept, sr)
		}
	}
	clear(s.inflight[len(kept):])
	s.inflight = kept
	if expiring {
		s.armed = false
	}
	if !s.armed && len(kept) > 0 {
		s.armed = true
		s.timer.Reset(time.Until(kept[0].req.deadline))
	}
	return out
}

// appendMuxAnswer appends an answer frame: a four-byte length, the
// request's id, and the answer the old stream gives.
func appendMuxAnswer(out []byte, id uint64, shard int, results []engine.Result, err error, h forwardHandler) []byte {
	start := len(out)
	out = append(out, 0, 0, 0, 0)
	out = binary.AppendUvarint(out, id)
	out = appendCommandsReply(out, shard, results, err, h)
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	return out
}
