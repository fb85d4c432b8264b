package federation

import (
	"context"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// The agent, once every sync interval: it lists the global keys of each
// shard this node leads, decides for each what to send (a lease request
// to a strict key's home, counts to every other region for a relaxed
// key) or to record here (a seal, a block of the partition floor), and
// sends it. Answers are recorded as they come, by goroutines of their
// own, so that a slow region delays only its own keys.
//
// What the agent remembers of a key (keyState) is soft: its demand, its
// peaks, what it sent. A new leader's agent starts without it and loses
// at most one interval's estimate; the request ids, which must survive a
// failover, are the key's record's (engine.GlobalKey.NextReq).

// Rounds of the agent.
const (
	scanPage = 1000
	// sealAfter is how many rounds without demand a region holds a
	// key's blocks before it retires them, so that the home refunds
	// their unused units while it still can.
	sealAfter = 2
	// forgetAfter is how many rounds a key unlisted stays in memory.
	forgetAfter = 50
	// countsHeartbeat is how many rounds unchanged counts wait before
	// they are sent again (a region that restarted learns them so).
	countsHeartbeat = 10
)

// keyState is what the agent remembers of a key.
type keyState struct {
	seen int64 // the round that last listed it
	// Strict: the units asked for and the shard time they were read at;
	// rounds without demand; until when a lease request is unanswered.
	asked, askedAt int64
	idle           int
	inflight       time.Time
	// Relaxed: its own window and count last read, its admissions per
	// round over the last window, the most of them, and the counts last
	// sent; the other regions' peaks.
	start, cur int64
	deltas     []roundDelta
	peak       int64
	sent       [3]int64
	sentRound  int64
	peaks      map[string]int64
}

// roundDelta is what a region admitted in one round ending at.
type roundDelta struct{ at, n int64 }

// plan is what one round sends and records.
type plan struct {
	leases map[string][]leaseJob    // by home region
	local  map[int][]engine.Command // installs of seals and floors, by shard
	counts []countJob               // relaxed counts, for every other region
}

// leaseJob is one key's lease request: the shard it lives in here, and
// the shard time the request was built at.
type leaseJob struct {
	shard int
	key   []byte
	q     engine.GlobalLeaseRequest
	base  int64
	lag   int64
}

// countJob is one relaxed key's counts to send.
type countJob struct {
	key []byte
	c   engine.GlobalCounts
}

// tick is one round.
func (f *Federation) tick() {
	round := f.stats.ticks.Add(1)
	f.stats.boundLast.Store(f.stats.boundMax.Swap(0))
	f.stats.boundRatioLast.Store(f.stats.boundRatioPPM.Swap(0))
	ctx, cancel := context.WithTimeout(context.Background(), f.linkTimeout())
	defer cancel()
	p := &plan{leases: map[string][]leaseJob{}, local: map[int][]engine.Command{}}
	for shard := range f.shards.Shards() {
		if f.leads(shard) {
			f.scanShard(shard, round, p)
		}
	}
	f.forget(round)
	f.dispatch(ctx, p)
}

// scanShard lists shard's global keys, from this node's replica, and
// plans for each.
func (f *Federation) scanShard(shard int, round int64, p *plan) {
	cursor := int64(0)
	for {
		res, err := f.shards.Read(shard, engine.GlobalScanCommand(cursor, scanPage))
		if err != nil {
			return // an election, a slow shard: the next round
		}
		sc, err := engine.DecodeGlobalScan(&res)
		if err != nil {
			f.cfg.Log.Error("federation: a scan that does not decode", "shard", shard, "err", err)
			return
		}
		f.stats.scanned.Add(int64(len(sc.Keys)))
		f.mu.Lock()
		for i := range sc.Keys {
			k := &sc.Keys[i]
			st := f.keyState(string(k.Key), round)
			if k.Relaxed {
				f.planRelaxed(p, sc.Now, round, k, st)
			} else {
				f.planStrict(p, shard, sc.Now, k, st)
			}
		}
		f.mu.Unlock()
		if cursor = sc.Cursor; cursor == 0 {
			return
		}
	}
}

// keyState returns the agent's memory of key, listed in round. f.mu is
// held.
func (f *Federation) keyState(key string, round int64) *keyState {
	st := f.keys[key]
	if st == nil {
		st = &keyState{}
		f.keys[key] = st
	}
	st.seen = round
	return st
}

// forget drops the keys no round has listed for a while.
func (f *Federation) forget(round int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, st := range f.keys {
		if st.seen+forgetAfter < round {
			delete(f.keys, k)
		}
	}
}

// dispatch records the local installs and sends the round's requests.
func (f *Federation) dispatch(ctx context.Context, p *plan) {
	for shard, cmds := range p.local {
		cluster.Do(ctx, f.shards, shard, cmds...) // lost: the next round plans it again
	}
	for home, jobs := range p.leases {
		f.stats.leasesSent.Add(int64(len(jobs)))
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.lease(home, jobs)
		}()
	}
	if len(p.counts) == 0 {
		return
	}
	for name := range f.links {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.sendCounts(name, p.counts)
		}()
	}
}

// syncMs is the sync interval in ms.
func (f *Federation) syncMs() int64 { return f.cfg.Sync.Milliseconds() }

// lagTo is the ms a request to region's home takes to be answered: the
// link's smoothed round trip, 1 for this region.
func (f *Federation) lagTo(region string) int64 {
	if l := f.links[region]; l != nil {
		return max(l.rtt.Load(), 1)
	}
	return 1
}

// reachable reports whether region's home can be asked: this region, a
// link that is up, or one never tried.
func (f *Federation) reachable(region string) bool {
	l := f.links[region]
	return l == nil || l.up.Load() || l.lastErr.Load() == nil
}
