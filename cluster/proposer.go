package cluster

import (
	"errors"
	"fmt"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// proposer packs every request waiting for its shard into one Raft entry,
// stamped once with the leader's clock, and hands each request its results
// once the entry is committed and applied. While an entry commits, requests
// pile up, and the next entry takes them all, and the callers it answers
// too when they come straight back (groupCommit). One entry in flight at a
// time serves more than several: each of several entries carries only the
// few requests that arrived since the last, and Raft's cost per entry
// outweighs what their overlap saves (docs/performance.md has the figures).
type proposer struct {
	shard    int
	self     string // this node's id, the leader it proposes as
	raft     *raft.Raft
	fsm      *shardFSM
	clock    *clockGuard // stamps each entry, while the clock is trusted
	in       chan *Request
	inflight chan inflightEntry
	slots    chan struct{} // one per entry in flight: gathering waits for one
	// buffers holds the results buffers of entries answered, for the next
	// (resultClaims): each entry in flight and the one being answered
	// has one.
	buffers chan []engine.Result
	hold    chan func() // run with nothing in flight (see quiesce)
	quit    chan struct{}
	done    chan struct{}

	group    groupCommit
	gathered time.Time   // when the last entry was gathered
	timer    *time.Timer // bounds a group wait; reused
	stamper  stamper     // the entries' times
}

// inflightEntry is an entry waiting to commit, or a marker (drained closes
// when every entry before it has completed).
type inflightEntry struct {
	future   raft.ApplyFuture
	proposed time.Time
	reqs     []*Request
	data     []byte       // the entry, which names its claim
	claim    *resultClaim // where the state machine writes its results
	drained  chan struct{}
}

// The go-metrics keys under which a leader's proposer reports how it groups
// requests into entries (metrics.RaftSink turns them into Prometheus
// histograms; docs/operations.md lists them).
var (
	// EntryRequestsSample: the requests gathered into each entry, as a
	// count rather than a time.
	EntryRequestsSample = []string{"rlserver", "proposer", "entryRequests"}
	// GroupWaitBackTiming times the waits that ended with the callers
	// back; GroupWaitRanOutTiming, those that reached their bound first.
	GroupWaitBackTiming   = []string{"rlserver", "proposer", "groupWait", "back"}
	GroupWaitRanOutTiming = []string{"rlserver", "proposer", "groupWait", "ranOut"}
)

// maxInflight is how many entries a shard's proposer has proposed and not
// seen committed: one, so that requests gather while it commits.
const maxInflight = 1

// newProposer makes the proposer of a shard's group; single says whether
// the group is a single node's (its group commit judges its waits by the
// pace of their callers: groupCommit).
func newProposer(shard int, self string, r *raft.Raft, fsm *shardFSM, clock *clockGuard, single bool) *proposer {
	return &proposer{
		shard: shard, self: self, raft: r, fsm: fsm, clock: clock, group: groupCommit{judgeStreams: single},
		in:       make(chan *Request, queueLen),
		inflight: make(chan inflightEntry, maxInflight+1),
		slots:    make(chan struct{}, maxInflight),
		buffers:  make(chan []engine.Result, maxInflight+1),
		hold:     make(chan func(), 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// start runs the proposer's two loops.
func (p *proposer) start() {
	go p.run()
	go func() {
		p.complete()
		close(p.done)
	}()
}

// stop fails what is still queued and waits for the entries in flight.
func (p *proposer) stop() {
	close(p.quit)
	<-p.done
}

// run gathers requests into entries and proposes them until stopped. Only
// the leader proposes a sweep; every replica applies it.
func (p *proposer) run() {
	defer close(p.inflight)
	var sweeps sweepPolicy
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-p.in:
			sweeps.request()
			// Wait for room before gathering: while the entries in flight
			// commit, requests pile up, and the next entry takes them all.
			waited := false
			select {
			case p.slots <- struct{}{}:
			default:
				waited = true
				p.slots <- struct{}{}
			}
			p.propose(p.gather(r, waited))
		case <-tick.C:
			if sweeps.due(p.fsm.stats().Keys) && p.raft.State() == raft.Leader {
				p.sweep()
			}
		case fn := <-p.hold:
			p.drain()
			fn()
		case <-p.quit:
			p.drain()
			for {
				select {
				case r := <-p.in:
					fail(r, retryError(p.shard, "", ErrNotApplied, "this node is stopping"))
				default:
					return
				}
			}
		}
	}
}

// quiesce runs fn on the proposer's loop once every entry in flight has
// completed, and proposes nothing until fn returns: a leadership transfer run
// this way strands no entry, so no request ends "may have been counted".
// Requests arriving meanwhile wait, then meet the new leader (through
// re-routing). It reports false when another quiesce is already pending.
func (p *proposer) quiesce(fn func()) bool {
	select {
	case p.hold <- fn:
		return true
	default:
		return false
	}
}

// drain waits until every entry proposed so far has completed.
func (p *proposer) drain() {
	marker := make(chan struct{})
	p.inflight <- inflightEntry{drained: marker}
	<-marker
}

// gather takes first and every request already waiting, as one batch,
// after waiting as long as groupCommit says for the callers the last entry
// answered. waited says whether first arrived while that entry committed.
func (p *proposer) gather(first *Request, waited bool) []*Request {
	var b batch // travels with its entry to complete: not reused
	b.add(first)
	start := time.Now()
	want, wait := p.group.plan(1+len(p.in), waited, start.Sub(p.gathered))
	timedOut := false
	var took time.Duration
	if want > 0 {
		if p.timer == nil {
			p.timer = time.NewTimer(wait)
		} else {
			p.timer.Reset(wait)
		}
		for len(b.reqs) < want && !b.full() && !timedOut {
			select {
			case r := <-p.in:
				b.add(r)
			case <-p.timer.C:
				timedOut = true
			}
		}
		p.timer.Stop()
		p.gathered = time.Now()
		took = p.gathered.Sub(start)
	} else {
		p.gathered = start
	}
	b.addWaiting(p.in)
	p.group.gathered(len(b.reqs), timedOut, took)
	metrics.AddSample(EntryRequestsSample, float32(len(b.reqs)))
	if want > 0 {
		key := GroupWaitBackTiming
		if timedOut {
			key = GroupWaitRanOutTiming
		}
		metrics.AddSample(key, float32(took)/float32(time.Millisecond))
	}
	return b.reqs
}

// propose proposes one entry for batch: the requests whose waiters still
// wait (take), whose commands it encodes, and then marks sent. While this
// node's clock is not trusted (clockcheck.go) it proposes nothing, and the
// requests wait for another leader.
func (p *proposer) propose(batch []*Request) {
	now, err := p.clock.stamp()
	if err != nil {
		<-p.slots
		err = retryError(p.shard, "", ErrNotApplied, "this node does not lead it while its clock is not trusted: "+err.Error())
		for _, r := range batch {
			fail(r, err)
		}
		return
	}
	taken := batch[:0]
	for _, r := range batch {
		if r.take() {
			taken = append(taken, r)
		}
	}
	if len(taken) == 0 {
		<-p.slots // nothing to propose: the slot is free again
		return
	}
	n := 0
	scripts := int64(0)
	for _, r := range taken {
		n += len(r.Cmds)
		scripts += scriptsIn(r.Cmds)
	}
	data := appendBatch(nil, p.stamper.stamp(now, scripts), taken)
	claim := p.fsm.claims.register(data, p.buffer(n))
	for _, r := range taken {
		r.markSent(p.self)
	}
	proposed := time.Now()
	// No timeout: Raft's apply queue is MaxAppendEntries deep (BatchApplyCh)
	// and this proposer, its only writer, has one entry in flight, so the
	// send never waits; a timeout would cost a timer an entry, live for as
	// long as it runs, and never fire.
	future := p.raft.Apply(data, 0)
	p.inflight <- inflightEntry{future: future, proposed: proposed, reqs: taken, data: data, claim: claim}
}

// buffer returns a results buffer of n, an answered entry's if one is
// spare.
func (p *proposer) buffer(n int) []engine.Result {
	select {
	case b := <-p.buffers:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]engine.Result, n)
}

// recycle keeps an answered entry's buffer, emptied, for a later entry.
func (p *proposer) recycle(b []engine.Result) {
	clear(b) // keep no reply's memory alive meanwhile
	select {
	case p.buffers <- b:
	default:
	}
}

// sweep proposes an entry that reclaims expired keys on every replica
// alike. Nobody waits for its answer.
func (p *proposer) sweep() {
	p.slots <- struct{}{}
	r, _ := newRequest([]engine.Command{sweepCommand()})
	p.propose([]*Request{r})
}

// complete waits for each entry in order and answers its requests.
func (p *proposer) complete() {
	for e := range p.inflight {
		if e.drained != nil {
			close(e.drained)
			continue
		}
		err := p.requestError(e.future.Error())
		p.group.committed(time.Since(e.proposed))
		<-p.slots
		buf, filled := p.fsm.claims.withdraw(e.data, e.claim)
		var results []engine.Result
		if err == nil {
			switch v := e.future.Response().(type) {
			case *resultClaim:
				if v != e.claim || !filled {
					err = &Failure{"shard commit failed: the entry's results were not written for it"}
					break
				}
				results = buf
			case error:
				// Committed, and refused alike by every replica (it does
				// not decode): nothing was decided.
				err = &Failure{fmt.Sprintf("shard commit failed: %v", v)}
			default:
				err = &Failure{fmt.Sprintf("shard commit failed: unexpected apply response %T", v)}
			}
		}
		deliver(e.reqs, results, err)
		p.recycle(buf)
	}
}

// requestError turns Raft's error for an entry into the request's error.
// Any error Raft does not promise left the entry out (ErrNotApplied's) is
// one whose outcome is unknown: a leader that cannot write its log (a full
// or failing disk) answers its entries with the store's error and steps
// down, and a failed fsync does not say what reached the disk. Those
// requests end "may have been counted", as after any lost leadership,
// rather than with the store's error text.
func (p *proposer) requestError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return retryError(p.shard, "", ErrNotApplied, "this node no longer leads it")
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return retryError(p.shard, p.self, ErrNotApplied, "its leader is overloaded")
	}
	return retryError(p.shard, p.self, ErrMayHaveBeenCounted,
		"the leader lost its leadership, or could not write its log, while this request was being committed")
}
