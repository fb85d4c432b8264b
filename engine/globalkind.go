package engine

// What a global key is as a kind of key: when it expires, what RL.INFO
// says of it, what it is charged.

// What a global key's side state is charged, as literals (see recordSize):
// the state itself with its map entry, a block, a report, a peer's counts,
// the home's state, a region's lease, a block the home remembers.
const (
	globalStateSize = 160
	globalBlockSize = 32
	globalUseSize   = 24
	peerCountSize   = 64
	homeStateSize   = 48
	regionLeaseSize = 200
	outBlockSize    = 40
)

// globalBytes is what g is charged.
func globalBytes(g *globalState) int64 {
	n := int64(globalStateSize) + globalBlockSize*int64(len(g.blocks)) + globalUseSize*int64(len(g.retired))
	for _, p := range g.peers {
		n += peerCountSize + int64(len(p.region))
	}
	if h := g.home; h != nil {
		n += homeStateSize
		for _, l := range h.leases {
			n += regionLeaseSize + int64(len(l.region)) + outBlockSize*int64(len(l.out)) + 8*int64(len(l.answer.acked))
		}
	}
	return n
}

// global is record i's side state.
func (ks *keyspace) global(i int32) *globalState { return ks.globals[i].state }

// setGlobal stores g as record i's side state and charges it.
func (ks *keyspace) setGlobal(i int32, g *globalState) {
	e := ks.globals[i]
	if e == nil {
		e = &globalEntry{}
		ks.globals[i] = e
	}
	charged := globalBytes(g)
	ks.globalLen += charged - e.charged
	e.state, e.charged = g, charged
}

// recharge charges record i's side state again after it changed.
func (ks *keyspace) recharge(i int32) { ks.setGlobal(i, ks.global(i)) }

// dropGlobal forgets record i's side state.
func (ks *keyspace) dropGlobal(i int32) {
	if e, ok := ks.globals[i]; ok {
		ks.globalLen -= e.charged
		delete(ks.globals, i)
	}
}

// globalEntry is a global key's side state and what it is charged.
type globalEntry struct {
	state   *globalState
	charged int64
}

// globalKind is a global key: it lives while any part of its state does
// (a block, a report to send, the home's algorithm state or its memory of
// a region, its counts or a peer's).
type globalKind struct{}

func (globalKind) expiresAt(ks *keyspace, i int32) int64 {
	g := ks.global(i)
	at := g.askedAt + GlobalIdleKeep
	for _, b := range g.blocks {
		at = max(at, b.until+GlobalReportKeep)
	}
	for _, u := range g.retired {
		at = max(at, u.Until+GlobalReportKeep)
	}
	if g.floor > 0 || g.dropped > 0 {
		at = max(at, g.floorAt+GlobalReportKeep)
	}
	if g.relaxed {
		at = max(at, windowExpiry(g.algo, g.params, ks.records.at(i).state))
		for _, p := range g.peers {
			at = max(at, windowExpiry(g.algo, g.params, p.state))
		}
	}
	if h := g.home; h != nil {
		if h.live {
			at = max(at, kinds[g.algo.kind()].expiresAt(ks, i))
		}
		for _, l := range h.leases {
			at = max(at, l.seen+GlobalReportKeep)
		}
	}
	return at
}

// windowExpiry is when a windowed algorithm's state st, under the
// command's parameters p, is back to nothing counted.
func windowExpiry(op Op, p, st [3]int64) int64 {
	if op == OpFixed {
		return fixedWindow{Limit: p[0], Window: p[1]}.expiresAt(windowCount{Start: st[0], Count: st[1]})
	}
	return slidingWindow{Limit: p[0], Window: p[1]}.expiresAt(windowCounts{Start: st[0], Prev: st[1], Cur: st[2]})
}

func (globalKind) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	g := ks.global(i)
	mode := "strict"
	if g.relaxed {
		mode = "relaxed"
	}
	f = append(f, Field{Name: "global_algorithm", Text: g.algo.Spec().Name}, Field{Name: "mode", Text: mode})
	params := g.algo.Spec().Params
	for k := range params {
		f = append(f, Field{Name: params[k].Name, Int: g.params[k]})
	}
	var remaining int64
	if g.relaxed {
		own, total := relaxedTotals(g, ks.records.at(i).state, now)
		_, d := decideWindowed(g.algo, g.params, total, now, 0)
		remaining = d.Remaining
		f = append(f, Field{Name: "own_count", Int: own}, Field{Name: "others_count", Int: total[curWord(g.algo)] - own},
			Field{Name: "regions_reporting", Int: int64(len(g.peers))}, Field{Name: "overshoot_bound", Int: g.bound})
	} else {
		remaining = liveHeld(g, now)
		f = append(f, Field{Name: "held", Int: remaining}, Field{Name: "fair_share", Int: g.share},
			Field{Name: "blocks", Int: int64(len(g.blocks))}, Field{Name: "reports_pending", Int: int64(len(g.retired))},
			Field{Name: "floor_units", Int: g.floor}, Field{Name: "overshoot_bound", Int: strictBound(g.algo, g.params)})
	}
	if h := g.home; h != nil {
		f = describeHome(ks, i, g, now, f)
	}
	return append(f, Field{Name: "remaining", Int: remaining}, Field{Name: "ttl_ms", Int: ks.expiresAt(i) - now})
}

// liveHeld is what the blocks in force at now have left.
func liveHeld(g *globalState, now int64) int64 {
	var n int64
	for _, b := range g.blocks {
		if b.until > now {
			n += b.n - b.used
		}
	}
	return n
}

// strictBound is what strict mode may admit beyond the limit, as RL.INFO
// states it: nothing in any aligned window for the windowed algorithms;
// for a bucket, over a span of T ms, what its rate adds in one block's
// life beyond capacity + rate × T, which depends on the TTL and is stated
// in docs/federation.md rather than here (-1: see the docs).
func strictBound(op Op, _ [3]int64) int64 {
	if windowed(op) {
		return 0
	}
	return -1
}

// describeHome appends what the home knows: its algorithm's budget, and
// each region's ledger.
func describeHome(ks *keyspace, i int32, g *globalState, now int64, f []Field) []Field {
	h := g.home
	avail := limitOf(g.algo, g.params)
	if h.live {
		avail = homeAvailable(ks, i, g, now)
	}
	f = append(f, Field{Name: "home_available", Int: avail}, Field{Name: "home_regions", Int: int64(len(h.leases))})
	for _, l := range h.leases {
		var out int64
		for _, b := range l.out {
			out += b.n
		}
		p := "region:" + l.region + ":"
		f = append(f, Field{Name: p + "granted", Int: l.granted}, Field{Name: p + "used", Int: l.used},
			Field{Name: p + "refunded", Int: l.refunded}, Field{Name: p + "outstanding", Int: out},
			Field{Name: p + "floor", Int: l.floor}, Field{Name: p + "floor_over", Int: l.floorOver},
			Field{Name: p + "demand", Int: l.demand})
	}
	return f
}

// valid checks a global key's record as far as it can without its side
// state, which the decoder checks as it reads it (decoder.global).
func (globalKind) valid(_, _ [3]int64, log []logEntry) bool { return len(log) == 0 }
