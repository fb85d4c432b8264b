package engine

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// grant is one granted cost at an instant.
type grant struct{ at, n int64 }

// traffic drives one algorithm with random costs at random, increasing times
// and returns what it granted.
func traffic(seed uint64, steps int, maxGap, maxCost int64, decide func(now, cost int64) bool) []grant {
	rng := rand.New(rand.NewPCG(seed, 1))
	now := int64(1_000_000) + rng.Int64N(1_000_000)
	var out []grant
	for range steps {
		now += rng.Int64N(maxGap + 1)
		cost := rng.Int64N(maxCost + 1)
		if decide(now, cost) && cost > 0 {
			out = append(out, grant{now, cost})
		}
	}
	return out
}

// sumIn adds the grants made in [from, to).
func sumIn(gs []grant, from, to int64) int64 {
	var n int64
	for _, g := range gs {
		if g.at >= from && g.at < to {
			n += g.n
		}
	}
	return n
}

func TestPropertyNoAlgorithmExceedsItsBudget(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 2))
		limit := 1 + rng.Int64N(20)
		window := 1 + rng.Int64N(500)
		maxCost := 1 + rng.Int64N(limit+1)

		t.Run("fixed: every aligned window", func(t *testing.T) {
			s := NewShard()
			gs := traffic(seed, 800, window/4+1, maxCost, func(now, cost int64) bool {
				return decision(t, s, now, OpFixed, "k", limit, window, 0, cost).Allowed
			})
			for _, g := range gs {
				start := g.at - g.at%window
				if n := sumIn(gs, start, start+window); n > limit {
					t.Fatalf("seed %d: %d granted in the window at %d, limit %d", seed, n, start, limit)
				}
			}
		})
		t.Run("sliding: every aligned window", func(t *testing.T) {
			s := NewShard()
			gs := traffic(seed, 800, window/4+1, maxCost, func(now, cost int64) bool {
				return decision(t, s, now, OpSliding, "k", limit, window, 0, cost).Allowed
			})
			for _, g := range gs {
				start := g.at - g.at%window
				if n := sumIn(gs, start, start+window); n > limit {
					t.Fatalf("seed %d: %d granted in the window at %d, limit %d", seed, n, start, limit)
				}
			}
		})
		t.Run("log: every span of one window", func(t *testing.T) {
			s := NewShard()
			gs := traffic(seed, 800, window/4+1, maxCost, func(now, cost int64) bool {
				return decision(t, s, now, OpLog, "k", limit, window, 0, cost).Allowed
			})
			for _, g := range gs {
				if n := sumIn(gs, g.at, g.at+window); n > limit {
					t.Fatalf("seed %d: %d granted in the span from %d, limit %d", seed, n, g.at, limit)
				}
			}
		})
		rate := 1 + rng.Int64N(5)
		t.Run("token: capacity plus what refilled in any span", func(t *testing.T) {
			s := NewShard()
			gs := traffic(seed, 600, window/4+1, maxCost, func(now, cost int64) bool {
				return decision(t, s, now, OpToken, "k", limit, rate, window, cost).Allowed
			})
			for i := range gs {
				for j := i; j < len(gs); j++ {
					span := gs[j].at - gs[i].at
					if n := sumIn(gs, gs[i].at, gs[j].at+1); n > limit+span*rate/window {
						t.Fatalf("seed %d: %d granted in %d ms, capacity %d, %d per %d ms", seed, n, span, limit, rate, window)
					}
				}
			}
		})
		t.Run("throttle: burst plus one per emission interval", func(t *testing.T) {
			s := NewShard()
			th := throttle{MaxBurst: limit - 1, Count: rate, Period: 1 + window%5}
			gs := traffic(seed, 600, 400, maxCost, func(now, cost int64) bool {
				r := apply(s, now, OpThrottle, "k", th.MaxBurst, th.Count, th.Period, cost)
				return !r.Throttle.Limited
			})
			for i := range gs {
				for j := i; j < len(gs); j++ {
					span := (gs[j].at - gs[i].at) * nsPerMs
					if n := sumIn(gs, gs[i].at, gs[j].at+1); n > limit+span/th.emission() {
						t.Fatalf("seed %d: %d granted in %d ns, limit %d, T %d", seed, n, span, limit, th.emission())
					}
				}
			}
		})
	}
}

// seedScript is the seed article's Lua script evaluated in exact rationals:
// the oracle the integer slidingWindow must match, decision for decision.
type seedScript struct {
	limit, window   int64
	start, cur, prv int64
	seen            bool
}

func (o *seedScript) decide(now, cost int64) (allowed bool, remaining, wait int64) {
	start := now - now%o.window
	if !o.seen {
		o.start, o.seen = start, true
	}
	if start == o.start+o.window {
		o.prv, o.cur = o.cur, 0
	} else if start != o.start {
		o.prv, o.cur = 0, 0
	}
	o.start = start
	r := func(n int64) *big.Rat { return new(big.Rat).SetInt64(n) }
	elapsed := now - start
	estimate := new(big.Rat).Mul(r(o.prv), new(big.Rat).Quo(r(o.window-elapsed), r(o.window)))
	estimate.Add(estimate, r(o.cur))
	if new(big.Rat).Add(estimate, r(cost)).Cmp(r(o.limit)) > 0 {
		var w *big.Rat
		if o.cur+cost <= o.limit && o.prv > 0 {
			// window - elapsed - (limit - cur - cost) * window / prev
			w = new(big.Rat).Quo(r((o.limit-o.cur-cost)*o.window), r(o.prv))
			w.Sub(r(o.window-elapsed), w)
		} else {
			// (window - elapsed) + window * (1 - (limit - cost) / max(cur, 1))
			f := new(big.Rat).Quo(r(o.limit-cost), r(max(o.cur, 1)))
			w = new(big.Rat).Mul(r(o.window), new(big.Rat).Sub(r(1), f))
			w.Add(w, r(o.window-elapsed))
		}
		return false, 0, max(ceilRat(w), 1)
	}
	remaining = floorRat(new(big.Rat).Sub(r(o.limit-cost), estimate))
	o.cur += cost
	return true, remaining, 0
}

func floorRat(x *big.Rat) int64 {
	q := new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: floor for a positive denominator
	return q.Int64()
}

func ceilRat(x *big.Rat) int64 {
	return -floorRat(new(big.Rat).Neg(x))
}

func TestPropertySlidingWindowMatchesTheSeedScriptExactly(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 3))
		limit := 1 + rng.Int64N(200)
		window := 1 + rng.Int64N(100_000)
		oracle := &seedScript{limit: limit, window: window}
		s := NewShard()
		now := rng.Int64N(10 * window)
		for step := range 2000 {
			now += rng.Int64N(window/20 + 2)
			cost := int64(1)
			if rng.IntN(4) == 0 {
				cost = 1 + rng.Int64N(limit) // the script's formulas generalised to a cost <= limit
			}
			allowed, remaining, wait := oracle.decide(now, cost)
			d := decision(t, s, now, OpSliding, "k", limit, window, 0, cost)
			if d.Allowed != allowed || (allowed && d.Remaining != remaining) || d.RetryAfter != wait {
				t.Fatalf("seed %d step %d (limit %d window %d, now %d cost %d): got %+v, script says allowed=%v remaining=%d wait=%d",
					seed, step, limit, window, now, cost, d, allowed, remaining, wait)
			}
		}
	}
}

// randomCommands is a mixed workload over a few keys: every algorithm, peeks,
// refunds, impossible costs, leases, strings, policies, deletes, parameter
// changes and clock jumps. Every command is one commands could build.
func randomCommands(seed uint64, n int) ([]int64, []Command) {
	rng := rand.New(rand.NewPCG(seed, 4))
	keys := []string{"a", "b", "c", "d", "{x}1", "{x}2"}
	times := make([]int64, n)
	cmds := make([]Command, n)
	now := int64(1_700_000_000_000)
	for i := range cmds {
		now += rng.Int64N(300)
		times[i] = now
		c := Command{Key: []byte(keys[rng.IntN(len(keys))])}
		switch k := rng.IntN(24); {
		case k < 7:
			c.Op = OpSliding + Op(rng.IntN(7))
			c.Args = [4]int64{1 + rng.Int64N(10), 1 + rng.Int64N(5), 100 + rng.Int64N(2000), rng.Int64N(6) - 1}
			if c.Op == OpThrottle {
				c.Args[2], c.Args[3] = 1+rng.Int64N(3), rng.Int64N(4)
			}
			if c.Op != OpThrottle {
				c.Flags = []Flags{0, 0, 0, 0, 0, FlagPartial, FlagPartial, FlagForce}[rng.IntN(8)]
			}
		case k < 9:
			c.Op = OpExists + Op(rng.IntN(int(OpInfo-OpExists)+1))
		case k < 10:
			c.Op = OpDel
		case k < 11:
			c.Op = OpSweep
			c.Args[0] = rng.Int64N(8)
		case k < 12:
			c.Op = OpShape
			c.Args = [4]int64{1 + rng.Int64N(10), 1 + rng.Int64N(5), 100 + rng.Int64N(2000), rng.Int64N(4)}
		case k < 13:
			c.Op = OpQuota
			c.Args = [4]int64{1 + rng.Int64N(10), 1 + rng.Int64N(4), (rng.Int64N(7) - 3) * 3_600_000, rng.Int64N(4) - 1}
		case k < 14:
			c.Op = OpAcquire
			c.Args = [4]int64{1 + rng.Int64N(3), 100 + rng.Int64N(2000), 0, 1}
		case k < 15:
			c.Op = OpRelease
			c.Args[0] = now<<leaseIDShift - rng.Int64N(3_000<<leaseIDShift)
		case k < 16:
			c.Op = OpIncrBy
			c.Args[0] = rng.Int64N(7) - 3
		case k < 17:
			c.Op = OpSet
			c.Value = []byte([]string{"7", "x", "", "-3"}[rng.IntN(4)])
			if rng.IntN(2) == 0 {
				c.Args = [4]int64{100 + rng.Int64N(2000), ExpiryRelative}
			}
			c.Flags = []Flags{0, FlagNX, FlagXX, FlagKeepTTL, FlagGet}[rng.IntN(5)]
		case k < 18:
			c.Op = OpExpire
			c.Args = [4]int64{rng.Int64N(3000) - 100, ExpiryRelative}
			c.Flags = []Flags{0, FlagNX, FlagXX, FlagGT, FlagLT}[rng.IntN(5)]
		case k < 20:
			c = randomShare(rng, c.Key, now)
		case k < 21:
			c.Op = OpCheck
			c.Value = []byte([]string{"p", "q"}[rng.IntN(2)])
			c.Args[3] = rng.Int64N(4)
		case k < 23:
			c = randomReservation(rng, c.Key, now)
		default:
			c.Op = OpPolicySet
			c.Value = []byte([]string{"p", "q"}[rng.IntN(2)])
			op := []Op{OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpShape}[rng.IntN(7)]
			c.Args = [4]int64{1 + rng.Int64N(10), 1 + rng.Int64N(5), 100 + rng.Int64N(2000), int64(op)}
			if rng.IntN(3) == 0 {
				c.Flags = FlagShadow
			}
		}
		cmds[i] = c
	}
	return times, cmds
}

func TestPropertyReplayGivesTheSameStateAndAnswers(t *testing.T) {
	for seed := range uint64(30) {
		times, cmds := randomCommands(seed, 3000)
		a, b := NewShard(), NewShard()
		ra, rb := make([]Result, 1), make([]Result, 1)
		for i := range cmds {
			if !cmds[i].Valid() {
				t.Fatalf("seed %d step %d: %+v is not Valid", seed, i, cmds[i])
			}
			a.Apply(times[i], cmds[i:i+1], ra)
			b.Apply(times[i], cmds[i:i+1], rb)
			if !sameResult(ra[0], rb[0]) {
				t.Fatalf("seed %d step %d: %+v vs %+v", seed, i, ra[0], rb[0])
			}
		}
		if da, db := a.digest(), b.digest(); da != db {
			t.Fatalf("seed %d: digests differ: %s %s", seed, da, db)
		}
		checkCounters(t, a)
		// Batching does not change the outcome: the same commands applied in
		// one batch per distinct time give the same state.
		c := NewShard()
		for i := 0; i < len(cmds); {
			j := i
			for j < len(cmds) && times[j] == times[i] {
				j++
			}
			c.Apply(times[i], cmds[i:j], make([]Result, j-i))
			i = j
		}
		if da, dc := a.digest(), c.digest(); da != dc {
			t.Fatalf("seed %d: batched replay differs", seed)
		}
	}
}

func TestPropertyPeeksNeverChangeState(t *testing.T) {
	for seed := range uint64(30) {
		times, cmds := randomCommands(seed, 2000)
		s := NewShard()
		out := make([]Result, 1)
		for i := range cmds {
			s.Apply(times[i], cmds[i:i+1], out)
			if cmds[i].Op.kind() == kindNone {
				continue
			}
			peek := cmds[i]
			peek.Args[3] = 0
			before := s.digest()
			s.Apply(times[i], []Command{peek}, out)
			for _, op := range []Op{OpExists, OpType, OpPTTL, OpInfo} {
				s.Apply(times[i], []Command{{Op: op, Key: peek.Key}}, out)
			}
			if after := s.digest(); after != before {
				t.Fatalf("seed %d step %d: a peek or inspection changed the state", seed, i)
			}
		}
	}
}

func sameResult(a, b Result) bool {
	if a.Type != b.Type || a.Decision != b.Decision || a.Throttle != b.Throttle || a.Extras != b.Extras ||
		a.Int != b.Int || a.Text != b.Text || !sameError(a.Err, b.Err) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i] != b.Fields[i] {
			return false
		}
	}
	return true
}

// sameError reports whether two results' errors would reach the client
// alike (the errors are built per call, so they are not the same value).
func sameError(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
}
