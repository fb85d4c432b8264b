package engine

import (
	"cmp"
	"slices"
)

// A relaxed global key counts like its windowed algorithm, in the
// record's state words, and decides on the sum of its own counts and the
// other regions' last reported ones (globalState.peers). Counts only grow
// within a window, so a region's report merges by keeping the later
// window, and within one window the larger counts: a report applied
// twice, or late, changes nothing (a G-counter per window).

// decideRelaxed decides c on the sum of the counts; it returns the
// decision and the units granted.
func (s *Shard) decideRelaxed(now int64, c *Command, i int32, g *globalState) (Decision, int64) {
	// Read here, written through mut: a capture may hold the record.
	own := rollWindowed(g.algo, g.params, s.keys.records.at(i).state, now)
	cost := c.Args[3]
	if cost < 0 {
		own = refundWindowed(g.algo, g.params, own, now, -cost)
		s.keys.records.mut(i).state = own
		_, total := relaxedTotals(g, own, now)
		_, d := decideWindowed(g.algo, g.params, total, now, 0)
		d.Allowed, d.RetryAfter = true, 0
		return d, 0
	}
	_, total := relaxedTotals(g, own, now)
	want := cost
	if c.Flags&FlagPartial != 0 && cost > 0 {
		_, peek := decideWindowed(g.algo, g.params, total, now, 0)
		want = max(min(cost, peek.Remaining), 1)
	}
	_, d := decideWindowed(g.algo, g.params, total, now, want)
	if !d.Allowed {
		return d, 0
	}
	own[curWord(g.algo)] += want
	s.keys.records.mut(i).state = own
	return d, want
}

// curWord is where a windowed algorithm's state keeps the current
// window's count; its start is word 0, the sliding window's previous
// count word 1.
func curWord(op Op) int {
	if op == OpFixed {
		return 1
	}
	return 2
}

// rollWindowed returns st as of the window holding now.
func rollWindowed(op Op, p, st [3]int64, now int64) [3]int64 {
	if op == OpFixed {
		if start := now - now%p[1]; st[0] != start {
			return [3]int64{start}
		}
		return st
	}
	w := slidingWindow{Limit: p[0], Window: p[1]}
	c := w.roll(windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}, max(now, st[0]))
	return [3]int64{c.Start, c.Prev, c.Cur}
}

// rollPeer is rollWindowed for another region's counts, whose clock may
// have entered the next window already: its previous count is then the
// count of ours.
func rollPeer(op Op, p, st [3]int64, now int64) [3]int64 {
	start := now - now%p[1]
	if st[0] == start+p[1] {
		if op == OpFixed {
			return [3]int64{start}
		}
		return [3]int64{start, 0, st[1]}
	}
	return rollWindowed(op, p, st, now)
}

// relaxedTotals returns the region's own count in the current window and
// the sum of every region's counts, all rolled to now, laid out as one
// region's state.
func relaxedTotals(g *globalState, own [3]int64, now int64) (int64, [3]int64) {
	own = rollWindowed(g.algo, g.params, own, now)
	total := own
	for _, pc := range g.peers {
		st := rollPeer(g.algo, g.params, pc.state, now)
		total[1] = satAdd(total[1], st[1])
		total[2] = satAdd(total[2], st[2])
	}
	return own[curWord(g.algo)], total
}

// decideWindowed decides cost on a windowed state st.
func decideWindowed(op Op, p, st [3]int64, now, cost int64) ([3]int64, Decision) {
	if op == OpFixed {
		c, d := fixedWindow{Limit: p[0], Window: p[1]}.decide(windowCount{Start: st[0], Count: st[1]}, now, cost)
		return [3]int64{c.Start, c.Count}, d
	}
	c, d := slidingWindow{Limit: p[0], Window: p[1]}.decide(windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}, now, cost)
	return [3]int64{c.Start, c.Prev, c.Cur}, d
}

// refundWindowed takes n units back from the region's own counts.
func refundWindowed(op Op, p, st [3]int64, now, n int64) [3]int64 {
	if op == OpFixed {
		c := fixedWindow{Limit: p[0], Window: p[1]}.refund(windowCount{Start: st[0], Count: st[1]}, now, n, noSince)
		return [3]int64{c.Start, c.Count}
	}
	c := slidingWindow{Limit: p[0], Window: p[1]}.refund(windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}, now, n, noSince)
	return [3]int64{c.Start, c.Prev, c.Cur}
}

// adoptRelaxed converts the region's own counts to new parameters p, as
// the algorithm converts its state; the others' counts are in the old
// windows and count again once they report in the new ones (a new window
// length drops them).
func (s *Shard) adoptRelaxed(i int32, g *globalState, p [3]int64, now int64) {
	st := s.keys.records.at(i).state // a copy: s.keys.set writes it
	if g.algo == OpFixed {
		c := fixedWindow{Limit: p[0], Window: p[1]}.adopt(fixedWindow{Limit: g.params[0], Window: g.params[1]},
			windowCount{Start: st[0], Count: st[1]}, now)
		st = [3]int64{c.Start, c.Count}
	} else {
		c := slidingWindow{Limit: p[0], Window: p[1]}.adopt(slidingWindow{Limit: g.params[0], Window: g.params[1]},
			windowCounts{Start: st[0], Prev: st[1], Cur: st[2]}, now)
		st = [3]int64{c.Start, c.Prev, c.Cur}
	}
	if g.params[1] != p[1] {
		g.peers = nil
	}
	s.keys.set(i, KindGlobal, p, st)
}

// mergePeer records region's counts st and peak: a later window replaces
// the one held, the same window keeps the larger of each count.
func (g *globalState) mergePeer(region string, st [3]int64, peak int64) {
	j, found := slices.BinarySearchFunc(g.peers, region, func(p peerCount, r string) int { return cmp.Compare(p.region, r) })
	if !found {
		g.peers = slices.Insert(g.peers, j, peerCount{region: region, state: st, peak: peak})
		return
	}
	pc := &g.peers[j]
	switch {
	case st[0] > pc.state[0]:
		pc.state = st
	case st[0] == pc.state[0]:
		for k := 1; k < 3; k++ {
			pc.state[k] = max(pc.state[k], st[k])
		}
	}
	pc.peak = peak
}
