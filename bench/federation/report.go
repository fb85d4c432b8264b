package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/rlserver/rlserver/internal/fedload"
	"github.com/rlserver/rlserver/internal/poll"
)

// report checks the run and prints its figures; the error lists what
// failed a check.
func (b *bench) report() error {
	var failed []string
	fail := func(format string, args ...any) {
		failed = append(failed, fmt.Sprintf(format, args...))
	}
	fmt.Printf("three regions, each a 3-node cluster (3 shards), links delayed %v each way; %v of load, shift at %v; killed: %s\n",
		b.f.delay, b.duration, b.shift.Sub(b.start), b.killed)
	b.reportSliding(fail)
	b.reportToken(fail)
	b.reportRelaxed(fail)
	b.reportLatency()
	for _, key := range []string{tokenKey, slidingKey} {
		b.reconcile(key, fail)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d checks failed:\n  %s", len(failed), failed)
	}
	fmt.Println("every check passed")
	return nil
}

// reportSliding: every aligned window of the strict window within its limit.
func (b *bench) reportSliding(fail func(string, ...any)) {
	per := map[int64]int{}
	for _, g := range b.load.Of(slidingKey) {
		w, ok := fedload.WindowOf(g, window)
		if !ok {
			fail("a sliding grant whose window is ambiguous")
			continue
		}
		per[w]++
	}
	var ws []int64
	for w, n := range per {
		ws = append(ws, w)
		if n > limit {
			fail("window %d admitted %d, limit %d", w, n, limit)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	var counts []int
	for _, w := range ws {
		counts = append(counts, per[w])
	}
	fmt.Printf("strict RL.SLIDING %d per %d ms: admitted per window %v (never over)\n", limit, window, counts)
}

// reportToken: the bucket within capacity + rate x (span + TTL), and the
// rate used after the shift.
func (b *bench) reportToken(fail func(string, ...any)) {
	gs := b.load.Of(tokenKey)
	var slack time.Duration
	for _, g := range gs {
		slack = max(slack, g.Recv.Sub(g.Send))
	}
	for _, span := range []time.Duration{time.Second, 5 * time.Second} {
		bound := tokenCap + int(float64(tokenRate)*(span+ttl+slack).Seconds())
		most := fedload.MostWithin(gs, span)
		fmt.Printf("strict RL.TOKEN %d/s, %d deep: at most %d within %v (bound %d)\n", tokenRate, tokenCap, most, span, bound)
		if most > bound {
			fail("token: %d within %v, bound %d", most, span, bound)
		}
	}
	var per []int
	end := b.start.Add(b.duration)
	for from := b.shift.Add(2 * interval); !from.Add(time.Second).After(end); from = from.Add(time.Second) {
		per = append(per, fedload.AdmittedIn(gs, from, from.Add(time.Second)))
	}
	fmt.Printf("strict RL.TOKEN: admitted per second from two intervals after the shift %v\n", per)
}

// reportRelaxed: each window's overshoot, and the bound RL.INFO stated.
func (b *bench) reportRelaxed(fail func(string, ...any)) {
	per := map[int64]int{}
	for _, g := range b.load.Of(relaxedKey) {
		if w, ok := fedload.WindowOf(g, window); ok {
			per[w]++
		}
	}
	worst := 0
	var counts []int
	var ws []int64
	for w := range per {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	for _, w := range ws {
		counts = append(counts, per[w])
		worst = max(worst, per[w]-limit)
	}
	fmt.Printf("relaxed RL.SLIDING %d per %d ms: admitted per window %v; worst overshoot %d (%.1f%%), RL.INFO's bound %d\n",
		limit, window, counts, worst, 100*float64(worst)/limit, b.bounded)
	if int64(worst) > b.bounded {
		fail("relaxed: overshoot %d beyond the stated bound %d", worst, b.bounded)
	}
}

// reportLatency: the probe's local decisions.
func (b *bench) reportLatency() {
	lat := b.probe
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return
	}
	q := func(f float64) time.Duration { return lat[int(f*float64(len(lat)-1))] }
	fmt.Printf("local decisions (probe, region %s): %d, p50 %v, p99 %v, p99.9 %v, max %v; errors by kind %v\n",
		regions[0], len(lat), q(0.5), q(0.99), q(0.999), lat[len(lat)-1], b.errs)
}

// reconcile waits until key's home ledger has no block outstanding, then
// checks each region's used units against the grants seen: at least them,
// at most them and the requests that may have been counted unseen.
func (b *bench) reconcile(key string, fail func(string, ...any)) {
	h := home(key)
	var f map[string]any
	err := poll.Wait(60*time.Second, "the ledger of "+key+" to settle", func() (bool, error) {
		var err error
		if f, err = b.info(h, key); err != nil {
			return false, nil
		}
		for _, r := range regions {
			if f["region:"+r+":outstanding"] != int64(0) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		fail("%s: %v", key, err)
		return
	}
	seen := map[string]int64{}
	for _, g := range b.load.Of(key) {
		seen[regions[g.Region]]++
	}
	for _, r := range regions {
		used, _ := f["region:"+r+":used"].(int64)
		fmt.Printf("%s, region %s: %d grants seen, %d used in the home's ledger, %d requests may have been counted unseen\n",
			key, r, seen[r], used, b.maybe[r])
		if used < seen[r] || used > seen[r]+int64(b.maybe[r]) {
			fail("%s: region %s used %d, saw %d (%d unseen at most)", key, r, used, seen[r], b.maybe[r])
		}
	}
}
