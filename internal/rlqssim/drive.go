package rlqssim

import (
	"sync"
	"time"
)

// Step is how often Drive sends a batch of requests.
const Step = 5 * time.Millisecond

// driver is one Drive's requests: what it owes since it last sent.
type driver struct {
	mu     sync.Mutex
	id     map[string]string
	demand func(now time.Time) float64
	record func(now time.Time, allowed, denied int)
	last   time.Time
	owed   float64
}

// Drive sends requests of bucket id through e at the rate demand names at
// each moment (requests a second), in batches every Step, the fractions
// carried over, until e closes; record, when set, hears of each batch's
// outcome. Before each report the Envoy sends what Drive owes up to then,
// so that a report counts every request until its moment however late the
// goroutines run on a busy machine.
func (e *Envoy) Drive(id map[string]string, demand func(now time.Time) float64, record func(now time.Time, allowed, denied int)) {
	d := &driver{id: id, demand: demand, record: record, last: time.Now()}
	e.mu.Lock()
	e.drivers = append(e.drivers, d)
	e.mu.Unlock()
	e.every(Step, func() { d.catchUp(e, time.Now()) })
}

// catchUp sends the requests owed until now.
func (d *driver) catchUp(e *Envoy, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !now.After(d.last) {
		return
	}
	d.owed += d.demand(now) * now.Sub(d.last).Seconds()
	d.last = now
	n := int(d.owed)
	if n == 0 {
		return
	}
	d.owed -= float64(n)
	allowed := e.Request(d.id, n, now)
	if d.record != nil {
		d.record(now, allowed, n-allowed)
	}
}
