package federation

import (
	"context"

	"github.com/rlserver/rlserver/engine"
)

// A relaxed key's round: its own counts go to every other region when they
// changed (and every countsHeartbeat rounds anyway), with the most it
// admitted in one round over the last window, its peak.
//
// The bound. A region admits when its own count plus the others' last
// reported ones leave room. Take the last admission of a window, by region
// r at t: r's own count then, plus what each other region q had admitted
// by t − S_q, is within the limit, where S_q is how old q's report can be
// at r: one interval until q reports again, plus the link's delay. So the
// window admitted at most the limit plus what the others admitted within
// their S_q before t. q admits at most its peak a round, and a span of S_q
// overlaps ⌈S_q / interval⌉ + 1 of its rounds; so the overshoot is at most
//
//	Σ over q ≠ r of peak_q × (⌈S_q / interval⌉ + 1)
//
// and, not knowing which region admits last, the federation states the
// largest such sum: every region's term but the smallest. A region
// computes it for each key when another region's counts arrive, from the
// peaks reported and the links' measured round trips (an upper bound on
// the one-way delay), and records it in the key (RL.INFO's
// overshoot_bound); Stats reports the largest over the keys. The bound
// holds while the regions admit at most their reported peaks; docs/
// federation.md states it with numbers.

// planRelaxed plans key k's round. f.mu is held.
func (f *Federation) planRelaxed(p *plan, now, round int64, k *engine.GlobalKey, st *keyState) {
	start, cur := engine.GlobalWindowCount(k.Algo, k.State)
	delta := cur
	if start == st.start {
		delta = max(cur-st.cur, 0)
	}
	st.start, st.cur = start, cur
	_, window := engine.GlobalRate(k.Algo, k.Params)
	kept := st.deltas[:0]
	for _, d := range st.deltas {
		if d.at > now-window {
			kept = append(kept, d)
		}
	}
	st.deltas = append(kept, roundDelta{at: now, n: delta})
	st.peak = 0
	for _, d := range st.deltas {
		st.peak = max(st.peak, d.n)
	}
	if k.State == st.sent && round-st.sentRound < countsHeartbeat {
		return
	}
	st.sent, st.sentRound = k.State, round
	c := engine.GlobalCounts{Region: f.cfg.Region, Algo: k.Algo, Params: k.Params, State: k.State, Peak: st.peak}
	p.counts = append(p.counts, countJob{key: k.Key, c: c})
}

// sendCounts sends jobs to region.
func (f *Federation) sendCounts(region string, jobs []countJob) {
	ctx, cancel := context.WithTimeout(context.Background(), f.linkTimeout())
	defer cancel()
	words := make([][][]byte, len(jobs))
	for i := range jobs {
		c := jobs[i].c.Command(jobs[i].key)
		words[i] = peerWords("COUNTS", &c)
	}
	if _, err := f.links[region].call(ctx, words); err == nil {
		f.stats.countsSent.Add(int64(len(jobs)))
	}
}

// withBound returns c, region q.Region's counts of a key, with the
// overshoot bound computed from every region's peak (see the top of this
// file).
func (f *Federation) withBound(c engine.Command, q engine.GlobalCounts) engine.Command {
	f.mu.Lock()
	st := f.keys[string(c.Key)]
	if st == nil {
		st = &keyState{seen: f.stats.ticks.Load()}
		f.keys[string(c.Key)] = st
	}
	if st.peaks == nil {
		st.peaks = map[string]int64{}
	}
	st.peaks[q.Region] = q.Peak
	terms := []int64{st.peak * f.rounds(f.slowestLink())}
	for region, peak := range st.peaks {
		terms = append(terms, peak*f.rounds(f.lagTo(region)))
	}
	f.mu.Unlock()
	var sum, least int64
	for i, t := range terms {
		sum += t
		if i == 0 || t < least {
			least = t
		}
	}
	q.Bound = sum - least
	f.noteBound(q.Bound, engine.GlobalLimit(q.Algo, q.Params))
	return q.Command(c.Key)
}

// rounds is how many of a region's rounds a span of one interval plus a
// link's round trip of rtt ms overlaps.
func (f *Federation) rounds(rtt int64) int64 {
	sync := f.syncMs()
	return (sync+rtt+sync-1)/sync + 1
}

// slowestLink is the largest round trip among the links, in ms: this
// region's counts reach the slowest region last.
func (f *Federation) slowestLink() int64 {
	var most int64
	for name := range f.links {
		most = max(most, f.lagTo(name))
	}
	return most
}

// noteBound keeps the largest bound seen, in units and as a fraction of
// the limit (in millionths).
func (f *Federation) noteBound(bound, limit int64) {
	for {
		old := f.stats.boundMax.Load()
		if bound <= old || f.stats.boundMax.CompareAndSwap(old, bound) {
			break
		}
	}
	ppm := bound * 1_000_000 / max(limit, 1)
	for {
		old := f.stats.boundRatioPPM.Load()
		if ppm <= old || f.stats.boundRatioPPM.CompareAndSwap(old, ppm) {
			break
		}
	}
}
