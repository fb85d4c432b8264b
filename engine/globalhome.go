package engine

import (
	"cmp"
	"math"
	"slices"
)

// The home's side of a strict global key (OpGlobalLease). A region's
// request reports the blocks it is done with and asks for a new one; the
// home applies it once, whatever the retries: a request carries the
// region's id for it, and a retry of the last one gets its answer again.
//
// Reports: what a block did not use is refunded to the key's algorithm
// while the refund lands in the window the block was counted in (the
// windowed algorithms); a bucket's level has drained since, and a refund
// could then free units another region's block used, so a bucket refunds
// nothing. Units admitted under the partition floor are counted when they
// are reported, as far as the algorithm has room.
//
// Grants: a region asks for Need units, what it expects to admit in the
// next Period beyond what it holds. What the algorithm has available now
// is split among the active regions' needs, max-min (as RL.SHARE splits a
// rate), and the region gets its part: its need while everyone's fits,
// and never the part of a region that needs it too. The algorithm then
// counts the block at once (as a COST n decision, PARTIAL): whatever the
// sizing, the units all regions may admit are units the algorithm
// granted.

// globalLease applies OpGlobalLease.
func (s *Shard) globalLease(now int64, c *Command, r *Result) {
	q, _ := globalLeaseOf(c) // Valid: commands and the codec checked it
	i, g, err := s.globalFor(now, c.Key, q.Algo, false, q.Params)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	if g.home == nil {
		g.home = &homeState{}
	}
	g.home.prune(now)
	l := g.home.lease(q.Region)
	a := s.answerLease(now, i, g, l, &q)
	s.keys.recharge(i)
	r.Type, r.Text = ResBulk, string(appendGrant(nil, &a))
}

// answerLease answers q from region lease l.
func (s *Shard) answerLease(now int64, i int32, g *globalState, l *regionLease, q *GlobalLeaseRequest) GlobalGrant {
	switch {
	case l.req != 0 && q.Req == l.req:
		return l.answer.grant(l.req, now)
	case q.Req < l.req:
		return GlobalGrant{Req: q.Req, Stale: true}
	}
	ans := leaseAnswer{acked: s.takeReports(now, i, g, l, q), floor: q.Floor, dropped: q.Dropped}
	l.demand, l.need, l.seen = q.Demand, q.Need, now
	units, period := rateOf(g.algo, g.params)
	ans.share = g.home.fairShare(l, units, now, q.TTL)
	n := s.blockSize(now, i, g, l, q)
	until := now + q.TTL
	if windowed(g.algo) {
		until = min(until, windowEnd(g.params, now))
	}
	if l.demand != UnknownDemand { // no more than it can use before the block ends
		n = min(n, mulDivCeil(l.demand, max(until-now-q.Lag, 0), period))
	}
	got := s.homeSpend(now, i, g, n, true)
	if got > 0 {
		g.home.lastID = leaseID(g.home.lastID, now)
		ob := outBlock{id: g.home.lastID, n: got, until: until}
		if windowed(g.algo) {
			ob.wstart, ob.wlen = now-now%g.params[1], g.params[1]
		}
		l.out = append(l.out, ob)
		if len(l.out) > maxGlobalOut {
			l.out = slices.Delete(l.out, 0, 1)
		}
		l.granted = satAdd(l.granted, got)
		ans.block, ans.n, ans.until = ob.id, got, ob.until
	}
	l.req, l.answer = q.Req, ans
	return ans.grant(q.Req, now)
}

// grant is a's answer to request req as of now: the block's TTL counts
// from now, so that a retry answered later ends no later.
func (a *leaseAnswer) grant(req, now int64) GlobalGrant {
	return GlobalGrant{Req: req, Block: a.block, Units: a.n, TTL: max(a.until-now, 0), Share: a.share,
		Acked: slices.Clone(a.acked), Floor: a.floor, Dropped: a.dropped}
}

// takeReports applies q's reports to lease l: refunds, the ledger, the
// floor's units. It returns the ids of the blocks reported.
func (s *Shard) takeReports(now int64, i int32, g *globalState, l *regionLease, q *GlobalLeaseRequest) []int64 {
	var acked []int64
	for _, u := range q.Retired {
		if slices.Contains(acked, u.ID) {
			continue
		}
		acked = append(acked, u.ID)
		l.used = satAdd(l.used, u.Used)
		j := slices.IndexFunc(l.out, func(b outBlock) bool { return b.id == u.ID })
		if j < 0 {
			continue // forgotten (too old to refund), or never this region's
		}
		ob := l.out[j]
		l.out = slices.Delete(l.out, j, j+1)
		if unused := ob.n - min(u.Used, ob.n); unused > 0 && refundable(g, ob, now) {
			s.homeSpend(now, i, g, -unused, false)
			l.refunded = satAdd(l.refunded, unused)
		}
	}
	if q.Floor > 0 {
		got := s.homeSpend(now, i, g, q.Floor, true)
		l.floor, l.floorOver = satAdd(l.floor, q.Floor), satAdd(l.floorOver, q.Floor-got)
	}
	l.used = satAdd(l.used, q.Dropped)
	return acked
}

// refundable reports whether block ob's unused units can be given back at
// now: it was counted in the window still in progress, of the same
// length.
func refundable(g *globalState, ob outBlock, now int64) bool {
	return windowed(g.algo) && ob.wlen == g.params[1] && ob.wstart == now-now%ob.wlen
}

// blockSize is the units to grant lease l for request q: its part of
// what the algorithm has available, split max-min among the needs of the
// regions that asked within the TTL. When every need is met, half of
// what is left is split the same way among up to three times each need
// more: a region whose demand jumps then keeps admitting until its next
// request says so (the other half stays for regions that have not asked
// yet).
func (s *Shard) blockSize(now int64, i int32, g *globalState, l *regionLease, q *GlobalLeaseRequest) int64 {
	var needs []int64
	me := 0
	for j := range g.home.leases {
		o := &g.home.leases[j]
		if o.seen+q.TTL <= now {
			continue
		}
		if o == l {
			me = len(needs)
		}
		needs = append(needs, o.need)
	}
	got, keys := make([]int64, len(needs)), make([]uint64, len(needs))
	left := waterFill(homeAvailable(&s.keys, i, g, now), needs, keys, got)
	n := min(q.Need, got[me])
	if left > 0 {
		for j := range needs {
			needs[j] = min(3*needs[j], MaxCount)
		}
		waterFill(left/2, needs, keys, got)
		n += got[me]
	}
	return n
}

// fairShare is lease l's max-min fair share of the limit's rate, units
// per rate period, among the regions that asked within ttl.
func (h *homeState) fairShare(l *regionLease, units, now, ttl int64) int64 {
	var wants []int64
	me := -1
	for j := range h.leases {
		o := &h.leases[j]
		if o.seen+ttl <= now {
			continue
		}
		if o == l {
			me = len(wants)
		}
		w := int64(math.MaxInt64)
		if o.demand != UnknownDemand {
			w = o.demand
		}
		wants = append(wants, w)
	}
	got := make([]int64, len(wants))
	waterFill(units, wants, make([]uint64, len(wants)), got)
	return got[me]
}

// homeSpend counts cost (negative: a refund) against the key's algorithm
// at the home, PARTIAL when partial: it returns the units counted.
func (s *Shard) homeSpend(now int64, i int32, g *globalState, cost int64, partial bool) int64 {
	if cost == 0 {
		return 0
	}
	h, j := g.home, i
	if !h.live {
		j = -1
	}
	c := Command{Op: g.algo, Args: [4]int64{g.params[0], g.params[1], g.params[2], cost}}
	kind, v := g.algo.kind(), &s.verdict
	want := cost
	if partial && cost > 0 {
		if s.evaluateCost(now, &c, j, kind, 0, v, noSince); !v.d.Allowed || v.d.Remaining <= 0 {
			return 0
		}
		want = min(cost, v.d.Remaining)
	}
	s.evaluateCost(now, &c, j, kind, want, v, noSince)
	if !v.write || (cost > 0 && !v.d.Allowed) {
		return 0
	}
	s.keys.set(i, KindGlobal, v.params, v.state)
	h.live = true
	return want
}

// homeAvailable is what the key's algorithm at the home could grant now.
func homeAvailable(ks *keyspace, i int32, g *globalState, now int64) int64 {
	j := i
	if !g.home.live {
		j = -1
	}
	var v verdict
	v.kind = g.algo.kind()
	g.algo.Spec().algo.evaluate(ks, now, g.params, j, 0, &v)
	if !v.d.Allowed {
		return 0
	}
	return v.d.Remaining
}

// lease returns the home's lease of region, added when it has none.
func (h *homeState) lease(region string) *regionLease {
	j, found := slices.BinarySearchFunc(h.leases, region, func(l regionLease, r string) int { return cmp.Compare(l.region, r) })
	if !found {
		h.leases = slices.Insert(h.leases, j, regionLease{region: region, demand: UnknownDemand})
	}
	return &h.leases[j]
}

// prune forgets the regions not heard from for GlobalReportKeep, and the
// blocks past the time their units could be refunded or be in use.
func (h *homeState) prune(now int64) {
	h.leases = slices.DeleteFunc(h.leases, func(l regionLease) bool { return l.seen+GlobalReportKeep <= now })
	for j := range h.leases {
		l := &h.leases[j]
		l.out = slices.DeleteFunc(l.out, func(b outBlock) bool {
			if b.wlen > 0 {
				return b.wstart+b.wlen <= now
			}
			return b.until <= now
		})
	}
}
