package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// batch collects the commands of a pipeline segment: the engine commands go
// into one request per shard, submitted together when the segment is
// flushed, and every command keeps its place in the reply order. All of it
// is reused from one pipeline to the next, so a steady stream of decisions
// allocates nothing.
//
// Every segment is answered within the request timeout: a request its shard
// has not answered by then is given up (cluster.Request.Expire) and answered
// with the error that says how far it got. The cluster may still hold a
// request given up, and its commands: it is replaced, never reused.
type batch struct {
	reqs    []*cluster.Request // one per shard
	used    []int              // shards with commands in this segment
	expired []int              // shards whose request this segment gave up on
	shardOf []int32            // the shard of each engine command, in arrival order
	posOf   []int32            // its index in that shard's request
	replies []pending          // one per client command, in arrival order
	side    []byte             // replies encoded ahead of time: errors, local answers
	parsed  []engine.Command   // scratch for parsing one command
	done    chan struct{}      // the shards signal here; room for one per shard
	wake    func()             // called after each signal, on an event loop (Request.Wake)
	waiting int                // requests sent and not yet answered or given up
	timeout time.Duration      // the request timeout
	// deadline is when the segment sent last gives up on what is unanswered.
	deadline time.Time
	timer    *time.Timer // bounds each segment's wait; reused
}

// maxSegment bounds the client commands a segment holds: a longer pipeline
// is answered in segments, so that what a connection's batch holds, and
// keeps for the next pipeline, does not grow with the pipeline. Only a
// transaction, which must reach its shard as one request, makes a larger
// segment, and MaxRequestLen bounds it.
const maxSegment = 1024

// pending is one client command's place in the reply order: either engine
// commands [first, first+n) or bytes side[from:to] already encoded.
type pending struct {
	spec     *commands.Spec
	first, n int32
	from, to int32
	local    bool
	// skip is, for EXEC's guards (spec WATCH), how many replies after this
	// one are the transaction's, left out when it is aborted.
	skip int32
}

// init readies the batch of a new connection. Its requests to the shards,
// their channel and its timer are made when first needed (request, submit):
// a connection that has sent no command to a shard holds nothing for it.
// Made ahead, they were 630 bytes a connection on one shard and 12 KB on
// 64, all of it memory each collection scans, for every connection however
// idle (docs/performance.md, "The group wait under an open loop", on what
// a collection marks with 10,000 connections).
func (b *batch) init(shards int, timeout time.Duration) {
	b.reqs = make([]*cluster.Request, shards)
	b.timeout = timeout
}

// request is the batch's request to shard, made on its first use.
func (b *batch) request(shard int) *cluster.Request {
	if r := b.reqs[shard]; r != nil {
		return r
	}
	if b.done == nil {
		b.done = make(chan struct{}, len(b.reqs)) // room for one signal a shard
	}
	r := &cluster.Request{Done: b.done, Wake: b.wake}
	b.reqs[shard] = r
	return r
}

// setWake makes every request call wake after it signals the batch: an
// event loop learns so that a request it sent is answered. The batch has
// nothing outstanding.
func (b *batch) setWake(wake func()) {
	b.wake = wake
	for _, r := range b.reqs {
		if r != nil {
			r.Wake = wake
		}
	}
}

// addError queues an error reply.
func (b *batch) addError(err error) {
	from := len(b.side)
	b.side = appendError(b.side, err)
	b.replies = append(b.replies, pending{local: true, from: int32(from), to: int32(len(b.side))})
}

// addLocal queues a reply that encode writes into the side buffer now.
func (b *batch) addLocal(encode func([]byte) []byte) {
	from := len(b.side)
	b.side = encode(b.side)
	b.replies = append(b.replies, pending{local: true, from: int32(from), to: int32(len(b.side))})
}

// addKeyed parses a keyed command and routes each of its engine commands to
// the shard that owns its key.
func (b *batch) addKeyed(s *Server, spec *commands.Spec, args [][]byte) {
	if err := checkKeys(spec, args, s.cfg.Limits.MaxKeyLen); err != nil {
		b.addError(err)
		return
	}
	var err error
	b.parsed, err = spec.Parse(args, b.parsed[:0])
	if err == nil {
		err = s.checkFederated(b.parsed)
	}
	if err != nil {
		b.addError(err)
		return
	}
	b.replies = append(b.replies, pending{spec: spec, first: int32(len(b.shardOf)), n: int32(len(b.parsed))})
	for _, cmd := range b.parsed {
		shard := 0 // one shard owns every slot: no need to hash the key
		if len(b.reqs) > 1 {
			shard = s.shards.ShardOf(cluster.Slot(cmd.Key))
		}
		r := b.request(shard)
		if len(r.Cmds) == 0 {
			b.used = append(b.used, shard)
		}
		b.shardOf = append(b.shardOf, int32(shard))
		b.posOf = append(b.posOf, int32(len(r.Cmds)))
		r.Cmds = append(r.Cmds, cmd)
	}
}

// batchKeyed adds a keyed command (RouteKey) to the pipeline's batch, after
// noting for client-side caching the keys it reads (or, in NOLOOP mode,
// writes). Its reply comes when the batch is flushed.
func (c *conn) batchKeyed(spec *commands.Spec, args [][]byte) {
	if c.tracker != nil {
		c.noteKeys(spec, args)
	}
	c.batch.addKeyed(c.srv, spec, args)
}

// checkKeys refuses keys longer than the server allows.
func checkKeys(spec *commands.Spec, args [][]byte, maxLen int) error {
	var err error
	spec.Keys(args, func(k []byte) {
		if err == nil && len(k) > maxLen {
			err = fmt.Errorf("ERR key is %d bytes long, longer than the %d bytes allowed (--max-key-len)", len(k), maxLen)
		}
	})
	return err
}

// submit sends the segment's requests to their shards and waits for all,
// up to the request timeout.
func (b *batch) submit(s Shards) {
	if b.send(s) {
		return
	}
	if b.timer == nil { // only a connection served by a goroutine waits here
		b.timer = time.NewTimer(time.Until(b.deadline))
	} else {
		b.timer.Reset(time.Until(b.deadline))
	}
	defer b.timer.Stop()
	for b.waiting > 0 {
		select {
		case <-b.done:
			b.waiting--
		case <-b.timer.C:
			b.giveUp()
		}
	}
}

// send submits the segment's requests to their shards, to be answered by
// the request timeout, and reports whether all are answered already (memory
// shards answer within Submit). When not, their answers are taken by submit
// (waiting) or collect (not).
func (b *batch) send(s Shards) bool {
	b.deadline = time.Now().Add(b.timeout)
	for _, shard := range b.used {
		r := b.reqs[shard]
		if cap(r.Results) < len(r.Cmds) {
			r.Results = make([]engine.Result, len(r.Cmds), 2*len(r.Cmds))
		}
		r.Results = r.Results[:len(r.Cmds)]
		r.Deadline = b.deadline
		s.Submit(shard, r)
	}
	b.waiting = len(b.used)
	return b.collect()
}

// collect takes the answers signalled so far, without waiting, and reports
// whether none is awaited any more.
func (b *batch) collect() bool {
	for ; b.waiting > 0 && len(b.done) > 0; b.waiting-- {
		<-b.done
	}
	return b.waiting == 0
}

// giveUp gives up on the requests still unanswered at the deadline: those
// will not signal, and are answered with the error that says how far they
// got. A request being answered at that moment signals as usual.
func (b *batch) giveUp() {
	for _, shard := range b.used {
		if b.reqs[shard].Expire() {
			b.expired = append(b.expired, shard)
			b.waiting--
		}
	}
}

// encode appends the replies of the segment, in order.
func (b *batch) encode(out []byte, resp3 bool) []byte {
	for k := 0; k < len(b.replies); k++ {
		p := b.replies[k]
		switch {
		case p.local:
			out = append(out, b.side[p.from:p.to]...)
		case p.spec.ID == commands.IDWatch:
			var aborted bool
			if out, aborted = b.encodeGuards(out, p, resp3); aborted {
				k += int(p.skip)
			}
		default:
			out = b.encodeEngine(out, p, resp3)
		}
	}
	return out
}

// encodeEngine encodes one command answered by engine commands. A command
// spread over several keys (DEL a b c) answers the sum of their integers;
// RL.ALL answers its overall decision, then each limit's.
func (b *batch) encodeEngine(out []byte, p pending, resp3 bool) []byte {
	switch p.spec.ID {
	case commands.IDAll:
		return b.encodeAll(out, p, resp3)
	case commands.IDSetNX:
		return b.encodeSetNX(out, p)
	case commands.IDMGet, commands.IDMSet:
		return b.encodeMulti(out, p, resp3)
	case commands.IDReserve:
		return b.encodeReserve(out, p, resp3)
	}
	var sum int64
	for i := p.first; i < p.first+p.n; i++ {
		r := b.reqs[b.shardOf[i]]
		if r.Err != nil {
			return appendError(out, r.Err)
		}
		res := &r.Results[b.posOf[i]]
		if p.n == 1 {
			return appendResult(out, res, resp3)
		}
		sum += res.Int
	}
	return resp.AppendInt(out, sum)
}

// encodeAll encodes RL.ALL: an array of the overall decision and the
// limits' replies, or the group's error.
func (b *batch) encodeAll(out []byte, p pending, resp3 bool) []byte {
	r := b.reqs[b.shardOf[p.first]]
	if r.Err != nil {
		return appendError(out, r.Err)
	}
	head := &r.Results[b.posOf[p.first]]
	if head.Type != engine.ResDecision {
		return appendResult(out, head, resp3)
	}
	out = resp.AppendArray(out, int(p.n))
	for i := p.first; i < p.first+p.n; i++ {
		out = appendResult(out, &r.Results[b.posOf[i]], resp3)
	}
	return out
}

// encodeMulti encodes MGET, an array of its GETs' values (nil for a key
// that holds no string, as Redis answers), and MSET: OK once every SET is,
// else the first error.
func (b *batch) encodeMulti(out []byte, p pending, resp3 bool) []byte {
	for i := p.first; i < p.first+p.n; i++ {
		r := b.reqs[b.shardOf[i]]
		if r.Err != nil {
			return appendError(out, r.Err)
		}
		if res := &r.Results[b.posOf[i]]; res.Type == engine.ResError && !multiNil(p.spec, res) {
			return appendError(out, res.Err)
		}
	}
	if p.spec.ID == commands.IDMSet {
		return resp.AppendOK(out)
	}
	out = resp.AppendArray(out, int(p.n))
	for i := p.first; i < p.first+p.n; i++ {
		res := &b.reqs[b.shardOf[i]].Results[b.posOf[i]]
		if multiNil(p.spec, res) {
			out = resp.AppendNull(out, resp3)
			continue
		}
		out = appendResult(out, res, resp3)
	}
	return out
}

// multiNil reports whether res is MGET's nil for a key of another kind.
func multiNil(spec *commands.Spec, res *engine.Result) bool {
	return spec.ID == commands.IDMGet && res.Type == engine.ResError && errors.Is(res.Err, engine.ErrWrongType)
}

// encodeReserve encodes RL.RESERVE: the decision, its reservation's seq
// replaced by the id built from it and the key.
func (b *batch) encodeReserve(out []byte, p pending, resp3 bool) []byte {
	r := b.reqs[b.shardOf[p.first]]
	if r.Err != nil {
		return appendError(out, r.Err)
	}
	pos := b.posOf[p.first]
	res := &r.Results[pos]
	if res.Type != engine.ResDecision {
		return appendResult(out, res, resp3)
	}
	return appendReservation(out, res, r.Cmds[pos].Key, resp3)
}

// encodeSetNX encodes SETNX: 1 when SET NX set the key, 0 when not.
func (b *batch) encodeSetNX(out []byte, p pending) []byte {
	r := b.reqs[b.shardOf[p.first]]
	if r.Err != nil {
		return appendError(out, r.Err)
	}
	switch res := &r.Results[b.posOf[p.first]]; res.Type {
	case engine.ResOK:
		return resp.AppendInt(out, 1)
	case engine.ResNil:
		return resp.AppendInt(out, 0)
	default:
		return appendResult(out, res, false)
	}
}

// reset empties the batch, keeping its memory, and lets go of the commands'
// buffers.
func (b *batch) reset() {
	for _, shard := range b.expired {
		b.reqs[shard] = nil // a shard may still read it: left alone, a new one when next needed
	}
	b.expired = b.expired[:0]
	for _, shard := range b.used {
		if r := b.reqs[shard]; r != nil {
			clear(r.Cmds)
			r.Cmds = r.Cmds[:0]
		}
	}
	b.used = b.used[:0]
	b.shardOf = b.shardOf[:0]
	b.posOf = b.posOf[:0]
	b.replies = b.replies[:0]
	b.side = b.side[:0]
}

// flush submits what the batch holds and appends its replies to out.
func (c *conn) flush(out []byte) []byte {
	b := &c.batch
	if len(b.replies) == 0 {
		return out
	}
	if c.nowait.on {
		if !b.send(c.srv.shards) {
			c.nowait.suspended = true // the loop encodes the replies once answered
			return out
		}
	} else {
		b.submit(c.srv.shards)
	}
	return c.encodeSegment(out)
}

// encodeSegment appends the replies of the segment sent, all answered, and
// empties the batch for the next.
func (c *conn) encodeSegment(out []byte) []byte {
	b := &c.batch
	out = b.encode(out, c.resp3.Load())
	b.reset()
	return out
}

// everyShard runs one engine command on every shard (each one for which
// include says so, when given) through its leader, and returns the results in
// shard order (zero for those left out), or the first request error.
func (c *conn) everyShard(cmd engine.Command, include ...func(shard int) bool) ([]engine.Result, error) {
	b := &c.batch
	for shard := range b.reqs {
		if len(include) > 0 && !include[0](shard) {
			continue
		}
		r := b.request(shard)
		r.Cmds = append(r.Cmds[:0], cmd)
		b.used = append(b.used, shard)
	}
	b.submit(c.srv.shards)
	results := make([]engine.Result, len(b.reqs))
	var err error
	for _, shard := range b.used {
		if e := b.reqs[shard].Err; e != nil && err == nil {
			err = e
		}
		results[shard] = b.reqs[shard].Results[0]
	}
	b.reset()
	return results, err
}
