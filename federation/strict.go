package federation

import (
	"context"
	"math/bits"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// A strict key's round: measure its demand since the last round, and ask
// its home for what it needs until the answer to its next request is
// recorded, two intervals and two round trips (the reserve that keeps it
// admitting meanwhile), reporting the blocks it is done with. A key without demand
// and nothing to report sends nothing; after sealAfter such rounds its
// blocks are retired here, to be reported, and refunded, at once.

// planStrict plans key k's round. f.mu is held.
func (f *Federation) planStrict(p *plan, shard int, now int64, k *engine.GlobalKey, st *keyState) {
	_, period := engine.GlobalRate(k.Algo, k.Params)
	sync := f.syncMs()
	delta, dt := k.Asked-st.asked, now-st.askedAt
	if st.askedAt == 0 || delta < 0 { // new to this agent, or the record is
		delta, dt = k.Asked, sync
	}
	st.asked, st.askedAt = k.Asked, now
	st.idle++
	if delta > 0 {
		st.idle = 0
	}
	report := len(k.Retired) > 0 || k.Floor > 0 || k.Dropped > 0
	if delta == 0 && !report {
		if k.Held > 0 && st.idle >= sealAfter {
			seal := engine.GlobalInstall{Algo: k.Algo, Params: k.Params, Seal: true}
			p.local[shard] = append(p.local[shard], seal.Command(k.Key))
			f.stats.seals.Add(1)
		}
		return
	}
	if time.Now().Before(st.inflight) {
		return
	}
	home := Home(k.Key, f.regions)
	lag := f.lagTo(home)
	if !f.reachable(home) {
		f.planFloor(p, shard, now, k)
	}
	demand := mulDivCeil(delta, period, max(dt, 1))
	// The next request goes once this one's answer is recorded (its id
	// is the record's), at the round after a round trip; its answer
	// takes another: the reserve covers both.
	horizon := 2 * (sync + lag)
	q := engine.GlobalLeaseRequest{Region: f.cfg.Region, Algo: k.Algo, Params: k.Params, Req: k.NextReq,
		Demand: demand, Need: max(0, mulDivCeil(demand, horizon, period)-k.Held), Period: horizon,
		TTL: f.cfg.LeaseTTL.Milliseconds(), Lag: lag, Floor: k.Floor, Dropped: k.Dropped, Retired: k.Retired}
	st.inflight = time.Now().Add(f.linkTimeout())
	p.leases[home] = append(p.leases[home], leaseJob{shard: shard, key: k.Key, q: q, base: now, lag: lag})
}

// planFloor gives key k, whose home cannot be reached, a block of the
// partition floor when it holds nothing, for two intervals.
func (f *Federation) planFloor(p *plan, shard int, now int64, k *engine.GlobalKey) {
	if k.Held > 0 {
		return
	}
	units, period := engine.GlobalRate(k.Algo, k.Params)
	rate := int64(0)
	switch fl := f.cfg.Floor; {
	case fl.Share:
		rate = k.Share
	case fl.Percent > 0:
		rate = units * fl.Percent / 100
	}
	n := mulDivCeil(rate, 2*f.syncMs(), period)
	if n <= 0 {
		return
	}
	in := engine.GlobalInstall{Algo: k.Algo, Params: k.Params, FloorUnits: n, FloorUntil: now + 2*f.syncMs()}
	p.local[shard] = append(p.local[shard], in.Command(k.Key))
	f.stats.floorBlocks.Add(1)
}

// lease sends jobs to their home region and records the answers.
func (f *Federation) lease(home string, jobs []leaseJob) {
	ctx, cancel := context.WithTimeout(context.Background(), f.linkTimeout())
	defer cancel()
	cmds := make([]engine.Command, len(jobs))
	for i := range jobs {
		cmds[i] = jobs[i].q.Command(jobs[i].key)
	}
	grants, err := f.askHome(ctx, home, cmds)
	if err != nil {
		f.stats.leaseErrors.Add(int64(len(jobs)))
		f.settled(jobs)
		return
	}
	installs := make([]engine.Command, 0, len(jobs))
	for i, j := range jobs {
		g, err := engine.DecodeGlobalGrant(&grants[i])
		if err != nil {
			f.stats.leaseErrors.Add(1)
			continue
		}
		in := engine.GlobalInstall{Algo: j.q.Algo, Params: j.q.Params, Req: j.q.Req, Base: j.base, Grant: g,
			Retry: f.syncMs() + j.lag}
		installs = append(installs, in.Command(j.key))
		f.stats.unitsGranted.Add(g.Units)
	}
	results, errs := f.applyAll(installs, make([]error, len(installs)))
	for i := range results {
		switch {
		case errs[i] != nil:
		case results[i].Type == engine.ResInt && results[i].Int == 1:
			f.stats.installs.Add(1)
		default:
			f.stats.stale.Add(1)
		}
	}
	f.settled(jobs)
}

// settled marks jobs' keys as no longer waiting for an answer.
func (f *Federation) settled(jobs []leaseJob) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range jobs {
		if st := f.keys[string(j.key)]; st != nil {
			st.inflight = time.Time{}
		}
	}
}

// askHome applies lease requests at home: this region's shards, or the
// region's over its link. Each result is the grant's encoding, or an
// error result.
func (f *Federation) askHome(ctx context.Context, home string, cmds []engine.Command) ([]engine.Result, error) {
	l := f.links[home]
	if l == nil {
		results, errs := f.applyAll(cmds, make([]error, len(cmds)))
		for i, err := range errs {
			if err != nil {
				results[i] = engine.Result{Type: engine.ResError, Err: err}
			}
		}
		return results, nil
	}
	words := make([][][]byte, len(cmds))
	for i := range cmds {
		words[i] = peerWords("LEASE", &cmds[i])
	}
	vals, err := l.call(ctx, words)
	if err != nil {
		return nil, err
	}
	return replyResults(vals, len(cmds)), nil
}

// peerWords is c as a peer command's words.
func peerWords(name string, c *engine.Command) [][]byte {
	return [][]byte{[]byte(name), c.Key, strconv.AppendInt(nil, c.Args[0], 10), strconv.AppendInt(nil, c.Args[1], 10),
		strconv.AppendInt(nil, c.Args[2], 10), c.Value}
}

// replyResults reads n top-level replies: a bulk string is a grant's
// encoding, anything else an error result.
func replyResults(vals []resp.Value, n int) []engine.Result {
	out := make([]engine.Result, n)
	for i := range out {
		if len(vals) == 0 {
			out[i] = engine.Result{Type: engine.ResError, Err: errLinkDown}
			continue
		}
		var v []resp.Value
		v, vals = resp.Next(vals)
		if v[0].Kind == resp.KindBulk {
			out[i] = engine.Result{Type: engine.ResBulk, Text: v[0].Str}
		} else {
			out[i] = engine.Result{Type: engine.ResError, Err: errLinkDown}
		}
	}
	return out
}

// mulDivCeil is ⌈a×b/c⌉ for a, b >= 0 and c > 0, computed in 128 bits
// and held to engine.MaxCount, the most a demand or a need may be.
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(max(a, 0)), uint64(max(b, 0)))
	if hi >= uint64(c) {
		return engine.MaxCount
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	return int64(min(q, engine.MaxCount))
}
