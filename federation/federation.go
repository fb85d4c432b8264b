package federation

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// Shards is what the federation needs of the shard layer: the slot table,
// a queue per shard that applies a request's commands as one atomic step
// (cluster.MemoryShards and cluster.RaftShards; in Raft mode a shard this
// node does not lead forwards the request to its leader), and a read of
// this node's replica that goes through no log (the agent's scans).
type Shards interface {
	Shards() int
	ShardOf(slot uint16) int
	Submit(shard int, r *cluster.Request)
	Read(shard int, cmd engine.Command) (engine.Result, error)
}

// Federation is one node's part in a federation: the agent, which renews
// and reports the global keys of the shards the node leads, and the
// server, which answers the other regions.
type Federation struct {
	cfg     Config
	shards  Shards
	regions []string         // every region, sorted
	links   map[string]*link // the other regions, by name
	stats   counters

	mu        sync.Mutex
	keys      map[string]*keyState // the agent's memory of each key
	listeners []net.Listener
	conns     map[net.Conn]struct{} // the server's, to close at Close

	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
}

// New returns the federation of cfg over shards; Start starts its agent,
// Serve its server.
func New(cfg Config, shards Shards) (*Federation, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := &Federation{cfg: cfg, shards: shards, regions: cfg.regions(), links: map[string]*link{},
		keys: map[string]*keyState{}, conns: map[net.Conn]struct{}{}, stop: make(chan struct{})}
	for _, p := range cfg.Peers {
		f.links[p.Name] = &link{f: f, peer: p}
	}
	return f, nil
}

// Start runs the agent until Close.
func (f *Federation) Start() {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := time.NewTicker(f.cfg.Sync)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
				f.tick()
			}
		}
	}()
}

// Close stops the agent and the server, closes the links, and waits for
// what they were doing. A block renewed meanwhile is recorded or not;
// either way the home counted it once.
func (f *Federation) Close() {
	f.stopped.Do(func() {
		close(f.stop)
		f.mu.Lock()
		for _, ln := range f.listeners {
			ln.Close()
		}
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		for _, l := range f.links {
			l.close()
		}
	})
	f.wg.Wait()
}

// dial dials addr, with cfg.Dial when set.
func (f *Federation) dial(ctx context.Context, addr string) (net.Conn, error) {
	if f.cfg.Dial != nil {
		return f.cfg.Dial(ctx, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// leads reports whether the agent works shard.
func (f *Federation) leads(shard int) bool { return f.cfg.Leads == nil || f.cfg.Leads(shard) }

// counters are the federation's counters.
type counters struct {
	ticks, scanned                   atomic.Int64
	leasesSent, leasesServed         atomic.Int64
	leaseErrors, installs, stale     atomic.Int64
	unitsGranted, floorBlocks, seals atomic.Int64
	countsSent, countsReceived       atomic.Int64
	authFailures                     atomic.Int64
	boundMax, boundRatioPPM          atomic.Int64 // this round's
	boundLast, boundRatioLast        atomic.Int64 // the last round's
}

// Stats are what the federation reports, for INFO and metrics.
type Stats struct {
	Region string
	// Ticks counts the agent's rounds; Keys, the global keys its last
	// round listed.
	Ticks, Keys int64
	// LeasesSent counts the lease requests this region's agent sent
	// (each key's, to its home, this region included); LeasesServed,
	// those the other regions sent here; LeaseErrors, those that got no
	// answer; Installs, the grants recorded; Stale, the answers to
	// requests already answered; UnitsGranted, the units of those grants.
	LeasesSent, LeasesServed, LeaseErrors, Installs, Stale, UnitsGranted int64
	// FloorBlocks counts the blocks of the partition floor; Seals, the
	// keys whose blocks were retired for want of demand.
	FloorBlocks, Seals int64
	// CountsSent and CountsReceived count relaxed keys' counts exchanged.
	CountsSent, CountsReceived int64
	// AuthFailures counts the connections refused for a bad secret or an
	// unknown region.
	AuthFailures int64
	// OvershootBound is the largest overshoot bound of a relaxed key
	// computed in this round or the last, in units, and as a fraction of
	// its limit.
	OvershootBound      int64
	OvershootBoundRatio float64
	// Links are the other regions' links, by name.
	Links []LinkStats
}

// LinkStats describe the link to one region.
type LinkStats struct {
	Region      string
	Up          bool
	RTTMillis   int64
	Calls, Fail int64
	LastError   string
}

// Stats returns the federation's counters.
func (f *Federation) Stats() Stats {
	c := &f.stats
	f.mu.Lock()
	keys := int64(len(f.keys))
	f.mu.Unlock()
	st := Stats{Region: f.cfg.Region, Ticks: c.ticks.Load(), Keys: keys,
		LeasesSent: c.leasesSent.Load(), LeasesServed: c.leasesServed.Load(), LeaseErrors: c.leaseErrors.Load(),
		Installs: c.installs.Load(), Stale: c.stale.Load(), UnitsGranted: c.unitsGranted.Load(),
		FloorBlocks: c.floorBlocks.Load(), Seals: c.seals.Load(),
		CountsSent: c.countsSent.Load(), CountsReceived: c.countsReceived.Load(), AuthFailures: c.authFailures.Load(),
		OvershootBound:      max(c.boundMax.Load(), c.boundLast.Load()),
		OvershootBoundRatio: float64(max(c.boundRatioPPM.Load(), c.boundRatioLast.Load())) / 1e6}
	for _, name := range f.regions {
		if l := f.links[name]; l != nil {
			ls := LinkStats{Region: name, Up: l.up.Load(), RTTMillis: l.rtt.Load(), Calls: l.calls.Load(), Fail: l.failed.Load()}
			if e := l.lastErr.Load(); e != nil {
				ls.LastError = *e
			}
			st.Links = append(st.Links, ls)
		}
	}
	return st
}

// regionNames lists the regions, for tests and logs.
func (f *Federation) regionNames() []string { return slices.Clone(f.regions) }
