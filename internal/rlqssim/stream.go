package rlqssim

import (
	"context"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
)

// openTimeout bounds opening a stream to a server that may be down.
const openTimeout = 2 * time.Second

// send sends r on the Envoy's stream, opening one if it has none; a
// report that cannot be sent is lost, and the broken stream dropped.
func (e *Envoy) send(r *qpb.RateLimitQuotaUsageReports) {
	st := e.currentStream()
	if st == nil {
		e.mu.Lock()
		e.counts.Lost++
		e.mu.Unlock()
		return
	}
	st.sendMu.Lock()
	err := st.c.Send(r)
	st.sendMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.counts.Lost++
		e.dropLocked(st)
		return
	}
	e.counts.Reports++
}

// currentStream is the Envoy's stream, opened on its next server if it
// has none; nil if none could be opened (it tries the next server at the
// next report).
func (e *Envoy) currentStream() *stream {
	e.mu.Lock()
	if e.stream != nil || e.ctx.Err() != nil || len(e.conns) == 0 {
		st := e.stream
		e.mu.Unlock()
		return st
	}
	conn := e.conns[e.next%len(e.conns)]
	e.mu.Unlock()
	ctx, cancel := context.WithCancel(e.ctx)
	opened := make(chan error, 1)
	var c qpb.RateLimitQuotaService_StreamRateLimitQuotasClient
	go func() {
		var err error
		c, err = qpb.NewRateLimitQuotaServiceClient(conn).StreamRateLimitQuotas(ctx)
		opened <- err
	}()
	t := time.NewTimer(openTimeout)
	defer t.Stop()
	var err error
	select {
	case err = <-opened:
	case <-t.C:
		cancel()
		err = <-opened
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		cancel()
		e.next++
		return nil
	}
	st := &stream{c: c, cancel: cancel}
	e.stream = st
	e.counts.Streams++
	go e.receive(st)
	return st
}

// dropLocked forgets st, broken, so that the next report opens a stream
// on the next server.
func (e *Envoy) dropLocked(st *stream) {
	if e.stream == st {
		e.stream = nil
		e.next++
	}
	st.cancel()
}

// receive applies st's responses until it breaks.
func (e *Envoy) receive(st *stream) {
	for {
		resp, err := st.c.Recv()
		if err != nil {
			e.mu.Lock()
			e.dropLocked(st)
			e.mu.Unlock()
			return
		}
		e.apply(resp, time.Now())
		if e.OnApply != nil {
			e.OnApply()
		}
	}
}

// apply applies a response's actions in order.
func (e *Envoy) apply(resp *qpb.RateLimitQuotaResponse, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range resp.GetBucketAction() {
		key := name(a.GetBucketId().GetBucket())
		b := e.buckets[key]
		if b == nil {
			continue // never reported: ignored
		}
		if a.GetAbandonAction() != nil {
			delete(e.buckets, key)
			e.counts.Abandons++
			continue
		}
		qa := a.GetQuotaAssignmentAction()
		s, ok := strategyOf(qa.GetRateLimitStrategy())
		if !ok {
			continue
		}
		b.apply(s, qa.GetAssignmentTimeToLive().AsDuration(), now)
		e.counts.Applied++
	}
}
