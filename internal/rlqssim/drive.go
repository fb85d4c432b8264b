package rlqssim

import "time"

// Step is how often Drive sends a batch of requests.
const Step = 5 * time.Millisecond

// Drive sends requests of bucket id through e at the rate demand names at
// each moment (requests a second), in batches every Step, the fractions
// carried over, until e closes; record, when set, hears of each batch's
// outcome.
func (e *Envoy) Drive(id map[string]string, demand func(now time.Time) float64, record func(now time.Time, allowed, denied int)) {
	t := time.NewTicker(Step)
	defer t.Stop()
	last, owed := time.Now(), 0.0
	for {
		select {
		case <-e.ctx.Done():
			return
		case now := <-t.C:
			owed += demand(now) * now.Sub(last).Seconds()
			last = now
			n := int(owed)
			if n == 0 {
				continue
			}
			owed -= float64(n)
			allowed := e.Request(id, n, now)
			if record != nil {
				record(now, allowed, n-allowed)
			}
		}
	}
}
