package rlqssim

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// BinWidth is the resolution of a fleet's tally of admitted requests.
const BinWidth = 100 * time.Millisecond

// Fleet is a set of Envoys sharing one bucket, with what a test measures
// of them: the requests admitted in every BinWidth since Start, and the
// largest sum of the rates assigned and in force at any moment an
// assignment arrived (the moments that sum can grow).
type Fleet struct {
	Envoys []*Envoy
	Bucket map[string]string
	start  time.Time
	done   sync.WaitGroup

	mu       sync.Mutex
	admitted []uint64 // per bin
	offered  []uint64
	maxSum   float64
	maxAt    time.Duration
	sums     uint64 // sums taken
	sumsMu   sync.Mutex
}

// NewFleet is n Envoys of domain reporting bucket every interval, Envoy i
// sending its streams to conns(i).
func NewFleet(n int, domain string, interval time.Duration, fallback Kind, bucket map[string]string,
	conns func(i int) []grpc.ClientConnInterface) *Fleet {
	f := &Fleet{Bucket: bucket}
	for i := range n {
		e := New(domain, interval, fallback, conns(i)...)
		e.OnApply = f.takeSum
		f.Envoys = append(f.Envoys, e)
	}
	return f
}

// Start runs every Envoy: its reports, and requests at demand(i, now) a
// second.
func (f *Fleet) Start(demand func(i int, now time.Time) float64) {
	f.start = time.Now()
	for i, e := range f.Envoys {
		f.done.Go(e.Run)
		f.done.Go(func() {
			e.Drive(f.Bucket, func(now time.Time) float64 { return demand(i, now) }, f.record)
		})
	}
}

// Stop closes every Envoy (their streams broken) and waits for them.
func (f *Fleet) Stop() {
	for _, e := range f.Envoys {
		e.Close()
	}
	f.done.Wait()
}

// Since is the time since Start.
func (f *Fleet) Since(now time.Time) time.Duration { return now.Sub(f.start) }

// record tallies a batch's outcome in its bin.
func (f *Fleet) record(now time.Time, allowed, denied int) {
	bin := int(now.Sub(f.start) / BinWidth)
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.admitted) <= bin {
		f.admitted, f.offered = append(f.admitted, 0), append(f.offered, 0)
	}
	f.admitted[bin] += uint64(allowed)
	f.offered[bin] += uint64(allowed + denied)
}

// Admitted is the requests admitted, and offered, from from to to after
// Start (in whole bins).
func (f *Fleet) Admitted(from, to time.Duration) (admitted, offered uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for b := int(from / BinWidth); b < int(to/BinWidth) && b < len(f.admitted); b++ {
		admitted += f.admitted[b]
		offered += f.offered[b]
	}
	return admitted, offered
}

// Rates are the rates (requests a second) each Envoy's assignment in
// force at now allows: 0 for DENY_ALL or none, +Inf for ALLOW_ALL.
func (f *Fleet) Rates(now time.Time) []float64 {
	out := make([]float64, len(f.Envoys))
	for i, e := range f.Envoys {
		if s, ok := e.Assigned(f.Bucket, now); ok {
			out[i] = s.PerSecond()
			if out[i] < 0 {
				out[i] = math.Inf(1)
			}
		}
	}
	return out
}

// takeSum notes the sum of the rates in force now.
func (f *Fleet) takeSum() {
	now := time.Now()
	var sum float64
	for _, r := range f.Rates(now) {
		sum += r
	}
	f.sumsMu.Lock()
	defer f.sumsMu.Unlock()
	f.sums++
	if sum > f.maxSum {
		f.maxSum, f.maxAt = sum, now.Sub(f.start)
	}
}

// MaxSum is the largest sum of rates in force seen, when it was seen, and
// how many sums were taken.
func (f *Fleet) MaxSum() (sum float64, at time.Duration, taken uint64) {
	f.sumsMu.Lock()
	defer f.sumsMu.Unlock()
	return f.maxSum, f.maxAt, f.sums
}

// Counts adds up what the Envoys saw.
func (f *Fleet) Counts() Counts {
	var c Counts
	for _, e := range f.Envoys {
		ec := e.Counts()
		c.Allowed += ec.Allowed
		c.Denied += ec.Denied
		c.FellBack += ec.FellBack
		c.Expired += ec.Expired
		c.Streams += ec.Streams
		c.Reports += ec.Reports
		c.Lost += ec.Lost
		c.Applied += ec.Applied
		c.Abandons += ec.Abandons
	}
	return c
}

// FairShares is the max-min fair split of limit among demands: every
// demand below an equal split of what is left is met, the rest share it
// equally.
func FairShares(limit float64, demands []float64) []float64 {
	out := make([]float64, len(demands))
	order := make([]int, len(demands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(demands[a], demands[b]) })
	left, n := limit, float64(len(demands))
	for _, i := range order {
		share := math.Min(demands[i], left/n)
		out[i], left, n = share, left-share, n-1
	}
	return out
}
