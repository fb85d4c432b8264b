package engine

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
)

// A simulation of strict global keys: regions, each a shard, one of them
// the key's home too, and an agent per region doing what the federation
// layer does (scan, ask the home, install), over a network that delays,
// loses and duplicates messages. Every grant is logged, and the checks
// run over the whole history.

// simEvent is something that happens at a time.
type simEvent struct {
	at  int64
	seq int
	do  func(now int64)
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simGrant is a grant a region's decision made.
type simGrant struct {
	region int
	at, n  int64
}

// globalSim is one run.
type globalSim struct {
	t       *testing.T
	rng     *rand.Rand
	q       simQueue
	seq     int
	op      Op
	p       [3]int64
	regions []*Shard
	names   []string
	lastAsk []int64 // each agent's last Asked seen
	grants  []simGrant
	loss    float64 // a message is lost with this probability
	period  int64   // the agents' sync interval
	ttl     int64
}

func (sim *globalSim) at(t int64, do func(now int64)) {
	sim.seq++
	heap.Push(&sim.q, simEvent{at: t, seq: sim.seq, do: do})
}

// send delivers do after a random delay, maybe not at all, maybe twice.
func (sim *globalSim) send(now int64, do func(now int64)) {
	if sim.rng.Float64() < sim.loss {
		return
	}
	sim.at(now+20+sim.rng.Int64N(60), do)
	if sim.rng.Float64() < sim.loss {
		sim.at(now+20+sim.rng.Int64N(200), do)
	}
}

// tick is region r's agent: it scans, and for each key asks the home.
func (sim *globalSim) tick(r int, now int64) {
	sc := scanGlobal(sim.t, sim.regions[r], now)
	for _, k := range sc.Keys {
		_, period := rateOf(k.Algo, k.Params)
		demand := (k.Asked - sim.lastAsk[r]) * period / sim.period
		sim.lastAsk[r] = k.Asked
		q := GlobalLeaseRequest{Region: sim.names[r], Algo: k.Algo, Params: k.Params, Req: k.NextReq,
			Demand: demand, Need: max(0, demand*2*sim.period/period-k.Held), Period: 2 * sim.period, TTL: sim.ttl, Lag: 100,
			Floor: k.Floor, Dropped: k.Dropped, Retired: k.Retired}
		key, base := string(k.Key), sc.Now
		sim.send(now, func(now int64) {
			a := askHome(sim.t, sim.regions[0], now, key, q)
			sim.send(now, func(now int64) {
				install(sim.t, sim.regions[r], now, key, GlobalInstall{Algo: q.Algo, Params: q.Params, Req: q.Req, Base: base, Grant: a, Retry: sim.period})
			})
		})
	}
}

// run drives demand[r] requests per second in region r for dur ms.
func (sim *globalSim) run(start, dur int64, demand func(r int, now int64) float64) int64 {
	end := start + dur
	for r := range sim.regions {
		for t := start + int64(r)*7; t < end; t += sim.period {
			sim.at(t, func(now int64) { sim.tick(r, now) })
		}
		var carry float64
		for t := start; t < end; t += 5 {
			sim.at(t, func(now int64) {
				carry += demand(r, now) * 5 / 1000
				n := int(carry)
				carry -= float64(n)
				for range n {
					if d := globalDecide(sim.t, sim.regions[r], now, sim.op, "k", false, sim.p, 1); d.Allowed {
						sim.grants = append(sim.grants, simGrant{r, now, 1})
					}
				}
			})
		}
	}
	for sim.q.Len() > 0 {
		e := heap.Pop(&sim.q).(simEvent)
		e.do(e.at)
	}
	return end
}

func newGlobalSim(t *testing.T, op Op, p [3]int64, seed uint64) *globalSim {
	sim := &globalSim{t: t, rng: rand.New(rand.NewPCG(seed, 1)), op: op, p: p, names: []string{"a", "b", "c"},
		lastAsk: make([]int64, 3), loss: 0.1, period: 100, ttl: 1000}
	for range 3 {
		sim.regions = append(sim.regions, NewShard())
	}
	return sim
}

// skewed is the load: 60/20/20 of twice the limit's rate, then
// 80% in the last region from the middle on.
func skewed(rate float64, shift int64) func(r int, now int64) float64 {
	return func(r int, now int64) float64 {
		shares := []float64{0.6, 0.2, 0.2}
		if now >= shift {
			shares = []float64{0.1, 0.1, 0.8}
		}
		return 2 * rate * shares[r]
	}
}

func TestGlobalStrictNeverOverTheLimitInAnyWindow(t *testing.T) {
	for _, tc := range []struct {
		op Op
		p  [3]int64
	}{{OpSliding, [3]int64{10_000, 10_000}}, {OpFixed, [3]int64{5000, 10_000}}} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%v/%d", tc.op.Spec().Name, seed), func(t *testing.T) {
				sim := newGlobalSim(t, tc.op, tc.p, seed)
				const t0 = 1_700_000_040_000
				rate := float64(tc.p[0]) * 1000 / float64(tc.p[1])
				end := sim.run(t0, 100_000, skewed(rate, t0+50_000))
				perWindow := map[int64]int64{}
				for _, g := range sim.grants {
					perWindow[g.at-g.at%tc.p[1]] += g.n
				}
				var used, windows int64
				for w, n := range perWindow {
					if n > tc.p[0] {
						t.Errorf("window %d admitted %d, limit %d", w, n, tc.p[0])
					}
					if w >= t0+2*tc.p[1] && w+tc.p[1] <= end {
						used, windows = used+n, windows+1
					}
				}
				share := float64(used) / float64(windows*tc.p[0])
				t.Logf("used %.3f of the limit", share)
				if share < 0.9 {
					t.Errorf("used %.2f of the limit", share)
				}
				sim.reconcile(t, end)
			})
		}
	}
}

// reconcile lets every block expire and be reported without loss, then
// checks the home's ledger against the grants: every unit a region
// admitted is counted once as used.
func (sim *globalSim) reconcile(t *testing.T, end int64) {
	sim.loss = 0
	sim.run(end+GlobalIdleKeep/2, 3*sim.ttl, func(int, int64) float64 { return 0 })
	f := info(t, sim.regions[0], end+GlobalIdleKeep, "k")
	for r, name := range sim.names {
		var n int64
		for _, g := range sim.grants {
			if g.region == r {
				n += g.n
			}
		}
		if got := f["region:"+name+":used"]; got != n {
			t.Errorf("region %s admitted %d, the home counts %v used (%v)", name, n, got, f)
		}
	}
}

func TestGlobalStrictBucketWithinItsBound(t *testing.T) {
	p := [3]int64{500, 1000, 1000} // RL.TOKEN: 500 deep, 1000 a second
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sim := newGlobalSim(t, OpToken, p, seed)
			const t0 = 1_700_000_040_000
			shift := int64(t0 + 10_000)
			end := sim.run(t0, 20_000, skewed(1000, shift))
			for _, span := range []int64{100, 1000, 5000} {
				bound := p[0] + (span+sim.ttl)*p[1]/p[2]
				if most := mostInSpan(sim.grants, span); most > bound {
					t.Errorf("%d admitted within %d ms, bound %d", most, span, bound)
				}
			}
			// Two sync intervals after the shift, the limit is used.
			from := shift + 2*sim.period
			if n := admittedIn(sim.grants, from, from+5000); n < 9*5000*p[1]/p[2]/10 {
				t.Errorf("%d admitted in the 5 s after the shift", n)
			}
			sim.reconcile(t, end)
		})
	}
}

// mostInSpan is the most units grants admitted within any span of ms.
func mostInSpan(grants []simGrant, ms int64) int64 {
	var most, in int64
	j := 0
	for _, g := range grants {
		in += g.n
		for grants[j].at <= g.at-ms {
			in -= grants[j].n
			j++
		}
		most = max(most, in)
	}
	return most
}

// admittedIn is the units granted in [from, to).
func admittedIn(grants []simGrant, from, to int64) int64 {
	var n int64
	for _, g := range grants {
		if g.at >= from && g.at < to {
			n += g.n
		}
	}
	return n
}
