package engine

import (
	"cmp"
	"slices"
)

// A global key is one limit shared by the regions of a federation: each
// region is its own cluster, and a request is always decided by the
// region it reaches, from state that region holds (docs/federation.md).
// The engine keeps that state and nothing else: which region is a key's
// home, the links between regions and when to renew are the federation
// layer's, which reaches a shard through the ops of this file's family
// (OpGlobalScan, OpGlobalLease, OpGlobalInstall, OpGlobalCounts), each
// applied through the log like any other command.
//
// A global key's record is of KindGlobal; its side state, globalState, is
// in keyspace.globals. Its mode is one of:
//
//   - strict: the region decides from blocks of units the key's home
//     region granted it. The home counts a block against the key's own
//     algorithm at once, as a decision of COST n (OpGlobalLease), so the
//     units every region may admit were all counted where the limit is
//     kept; a region reports what it used of a block once it is done with
//     it, and the home refunds the rest while the refund still lands in
//     the window the block was counted in. The home's algorithm state is
//     the record's own state words.
//   - relaxed: the region decides on its own counts (the record's state,
//     as its algorithm keeps them) plus the other regions' last reported
//     counts (globalState.peers), exchanged by the federation layer.
//
// Every region keeps the same record for a key, so the home region's
// record holds both its own blocks and the home's state (globalState.home).

// Bounds of the global keys' state.
const (
	// maxGlobalBlocks bounds a region's live blocks of one key: past it,
	// the block that expires first is retired early.
	maxGlobalBlocks = 8
	// maxGlobalRetired bounds the blocks a region keeps to report: past
	// it, the oldest report is dropped, its units kept in dropped.
	maxGlobalRetired = 16
	// maxGlobalOut bounds the blocks the home remembers of one region:
	// past it, the oldest is forgotten without a refund.
	maxGlobalOut = 16
	// MaxRegions bounds the regions of a federation, and of one key.
	MaxRegions = 16
	// MaxRegionLen bounds a region's name, in bytes.
	MaxRegionLen = 64
	// GlobalReportKeep is how long a region keeps the report of a block
	// after the block expired, and the home the memory of a region's
	// last request after it was made (its answer, for a retry): a region
	// cut off for longer than this loses its reports, which only leaves
	// units counted that it did not use.
	GlobalReportKeep = 15 * 60_000
	// GlobalIdleKeep is how long a region keeps a key it was asked about
	// and holds nothing of, for the federation layer to ask its home.
	GlobalIdleKeep = 60_000
	// DefaultGlobalRetry is the wait a refused request is told when the
	// federation layer has not said how soon its next block comes.
	DefaultGlobalRetry = 100
)

// globalState is a global key's state beside its record.
type globalState struct {
	algo    Op       // the key's algorithm: OpSliding, OpFixed, ...
	relaxed bool     // relaxed mode; strict otherwise
	params  [3]int64 // the parameters as the command gives them

	// The region's side, strict.
	blocks  []globalBlock // live blocks, the one that expires first first
	retired []GlobalUse   // blocks done with, to report to the home
	dropped int64         // units of reports dropped unsent (maxGlobalRetired)
	floor   int64         // units admitted under the partition floor, not yet reported
	floorAt int64         // the last such admission
	nextReq int64         // the id of the region's next lease request, from 1
	asked   int64         // units asked for, allowed or refused, ever (saturating)
	askedAt int64         // when last asked
	retry   int64         // ms a refused request waits for the next block
	share   int64         // the region's fair share, as the home last said

	// The region's side, relaxed.
	peers []peerCount // the other regions' last reported counts, by region
	bound int64       // the overshoot bound the federation layer computed

	home *homeState // the home's side; nil where no region asked this one
}

// globalBlock is a block of units a region may admit until until.
// A block of id 0 is the partition floor's: counted nowhere, its use is
// reported as floor units.
type globalBlock struct{ id, n, used, until int64 }

// GlobalUse is what a region used of a block: its id and units used, and
// when the block expired (the report is kept GlobalReportKeep after it).
type GlobalUse struct{ ID, Used, Until int64 }

// peerCount is another region's counts of a relaxed key, in its
// algorithm's state layout, as the region last reported them; peak is the
// most it admitted in one of its reporting intervals lately.
type peerCount struct {
	region string
	state  [3]int64
	peak   int64
}

// homeState is the home's side of a global key: the record's state words
// hold the key's algorithm state while live is set; leases are what it
// knows of each region that asked, by name.
type homeState struct {
	live   bool
	lastID int64 // the last block id granted (leaseID's scheme)
	leases []regionLease
}

// regionLease is the home's memory of one region: its last request and
// answer (a retry of the same request gets the same answer), its demand,
// the blocks granted it and not yet reported, and the running totals
// that reconcile what it was granted with what it used.
type regionLease struct {
	region string
	req    int64
	answer leaseAnswer
	demand int64 // units per rate period, or UnknownDemand
	need   int64 // units it asked for in its last request
	seen   int64 // when its last request was applied
	out    []outBlock
	// The ledger: units granted, refunded, reported used, reported under
	// the partition floor; and the floor units the algorithm had no room
	// for when they were reported (admitted over the limit).
	granted, refunded, used, floor, floorOver int64
}

// outBlock is a block granted and not yet reported: its units, its
// expiry, and the window (start and length) it was counted in, for the
// windowed algorithms (0, 0 for the others).
type outBlock struct{ id, n, until, wstart, wlen int64 }

// leaseAnswer is the home's answer to a lease request, kept for retries.
type leaseAnswer struct {
	block, n, until, share int64
	acked                  []int64 // the retired blocks the request reported
	floor, dropped         int64   // the floor and dropped units it reported
}

// GlobalOps are the algorithms a key may be global with, strict; the
// windowed ones may also be relaxed (GlobalRelaxedOps).
var GlobalOps = []Op{OpSliding, OpFixed, OpToken, OpLeaky, OpGCRA}

// GlobalRelaxedOps are the algorithms a key may be global with, relaxed.
var GlobalRelaxedOps = []Op{OpSliding, OpFixed}

// windowed reports whether op counts in aligned windows.
func windowed(op Op) bool { return op == OpSliding || op == OpFixed }

// rateOf is the limit's rate as units per period (ms): a window's limit
// per window, a bucket's drain.
func rateOf(op Op, p [3]int64) (units, period int64) {
	if windowed(op) {
		return p[0], p[1]
	}
	return p[1], p[2]
}

// limitOf is the budget a decision on p reports as its limit.
func limitOf(op Op, p [3]int64) int64 {
	if op == OpGCRA {
		return p[0] + 1
	}
	return p[0]
}

// windowEnd is the end of the window of op's parameters p that holds now,
// for the windowed algorithms.
func windowEnd(p [3]int64, now int64) int64 { return now - now%p[1] + p[1] }

// settle retires the blocks that expired by now, or that are used up.
func (g *globalState) settle(now int64) {
	g.blocks = slices.DeleteFunc(g.blocks, func(b globalBlock) bool {
		if b.until > now && b.used < b.n {
			return false
		}
		g.retire(b)
		return true
	})
	g.retired = slices.DeleteFunc(g.retired, func(u GlobalUse) bool {
		return u.Until+GlobalReportKeep <= now
	})
	if g.floor > 0 && g.floorAt+GlobalReportKeep <= now {
		g.floor = 0
	}
}

// retire moves block b, no longer used, to the reports; the floor's
// block has been counted as floor units already.
func (g *globalState) retire(b globalBlock) {
	if b.id == 0 {
		return
	}
	g.retired = append(g.retired, GlobalUse{ID: b.id, Used: b.used, Until: b.until})
	if len(g.retired) > maxGlobalRetired {
		g.dropped = satAdd(g.dropped, g.retired[0].Used)
		g.retired = slices.Delete(g.retired, 0, 1)
	}
}

// addBlock adds b to the live blocks, in expiry order.
func (g *globalState) addBlock(b globalBlock) {
	j, _ := slices.BinarySearchFunc(g.blocks, b, func(x, y globalBlock) int {
		return cmp.Or(cmp.Compare(x.until, y.until), cmp.Compare(x.id, y.id))
	})
	g.blocks = slices.Insert(g.blocks, j, b)
	if len(g.blocks) > maxGlobalBlocks {
		g.retire(g.blocks[0])
		g.blocks = slices.Delete(g.blocks, 0, 1)
	}
}

// held is the units the region's live blocks have left.
func (g *globalState) held() int64 {
	var n int64
	for _, b := range g.blocks {
		n += b.n - b.used
	}
	return n
}

// take admits n units, which held covers, from the blocks that expire
// first; those of the floor's block are counted as floor units.
func (g *globalState) take(n, now int64) {
	for j := 0; n > 0 && j < len(g.blocks); j++ {
		b := &g.blocks[j]
		k := min(n, b.n-b.used)
		b.used += k
		n -= k
		if b.id == 0 && k > 0 {
			g.floor, g.floorAt = satAdd(g.floor, k), now
		}
	}
}

// giveBack returns n units refunded by the caller to the blocks that
// expire last, up to what they had used.
func (g *globalState) giveBack(n int64) {
	for j := len(g.blocks) - 1; n > 0 && j >= 0; j-- {
		b := &g.blocks[j]
		k := min(n, b.used)
		b.used -= k
		n -= k
		if b.id == 0 {
			g.floor = max(g.floor-k, 0)
		}
	}
}

// GlobalRate is the rate of op's limit with the command's parameters p:
// units per period (ms). Demands and fair shares are in units per that
// period.
func GlobalRate(op Op, p [3]int64) (units, period int64) { return rateOf(op, p) }

// GlobalLimit is the budget a decision on op with the command's
// parameters p reports as its limit.
func GlobalLimit(op Op, p [3]int64) int64 { return limitOf(op, p) }

// GlobalWindowCount is the window start and the current window's count
// in a relaxed key's state st (GlobalKey.State).
func GlobalWindowCount(op Op, st [3]int64) (start, count int64) { return st[0], st[curWord(op)] }
