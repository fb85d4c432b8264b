package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// A global key's entry in a snapshot ends with its side state, as stored
// (blocks expired and not yet retired included, so that a restored replica
// holds, and is charged for, exactly what the others do):
//
//	algo varint, relaxed byte, params 3 varints
//	blocks uvarint, each: id, n, used, until varints
//	retired uvarint, each: id, used, until varints
//	dropped, floor, floorAt, nextReq, asked, askedAt, retry, share, bound varints
//	peers uvarint, each: region (uvarint length, bytes), state 3 varints, peak varint
//	home byte (0: none), then: live byte, lastID varint, leases uvarint, each:
//	  region, then req, demand, need, seen, granted, refunded, used,
//	  floor, floorOver varints, its answer (block, n,
//	  until, share, floor, dropped varints, acked uvarint and ids), its
//	  blocks out (uvarint, each id, n, until, wstart, wlen varints)
//
// A node of a release without global keys refuses a snapshot that holds
// one (an unknown kind), as it refuses an entry with their ops (cluster's
// ErrNewerEntry), rather than lose the blocks in force.

// appendGlobal appends record i's side state.
func appendGlobal(b []byte, ks *keyspace, i int32) []byte {
	if ks.frozenGlobals != nil {
		return append(b, ks.frozenGlobals[i]...)
	}
	g := ks.global(i)
	b = wire.AppendVarint(b, int64(g.algo))
	b = wire.AppendBool(b, g.relaxed)
	b = wire.AppendVarints(b, g.params[:]...)
	b = wire.AppendUvarint(b, uint64(len(g.blocks)))
	for _, k := range g.blocks {
		b = wire.AppendVarints(b, k.id, k.n, k.used, k.until)
	}
	b = wire.AppendUvarint(b, uint64(len(g.retired)))
	for _, u := range g.retired {
		b = wire.AppendVarints(b, u.ID, u.Used, u.Until)
	}
	b = wire.AppendVarints(b, g.dropped, g.floor, g.floorAt, g.nextReq, g.asked, g.askedAt, g.retry, g.share, g.bound)
	b = wire.AppendUvarint(b, uint64(len(g.peers)))
	for _, p := range g.peers {
		b = wire.AppendString(b, p.region)
		b = wire.AppendVarints(b, p.state[0], p.state[1], p.state[2], p.peak)
	}
	b = wire.AppendBool(b, g.home != nil)
	if h := g.home; h != nil {
		b = wire.AppendBool(b, h.live)
		b = wire.AppendVarint(b, h.lastID)
		b = wire.AppendUvarint(b, uint64(len(h.leases)))
		for j := range h.leases {
			b = appendLease(b, &h.leases[j])
		}
	}
	return b
}

// appendLease appends one region's lease at the home.
func appendLease(b []byte, l *regionLease) []byte {
	b = wire.AppendString(b, l.region)
	b = wire.AppendVarints(b, l.req, l.demand, l.need, l.seen, l.granted, l.refunded, l.used, l.floor, l.floorOver)
	a := &l.answer
	b = wire.AppendVarints(b, a.block, a.n, a.until, a.share, a.floor, a.dropped)
	b = wire.AppendUvarint(b, uint64(len(a.acked)))
	b = wire.AppendVarints(b, a.acked...)
	b = wire.AppendUvarint(b, uint64(len(l.out)))
	for _, o := range l.out {
		b = wire.AppendVarints(b, o.id, o.n, o.until, o.wstart, o.wlen)
	}
	return b
}

// global decodes what appendGlobal wrote into record i, checking what the
// code relies on: an algorithm a key may be global with and its
// parameters, blocks in expiry order within their bounds, regions sorted
// and distinct, counts and times in range, and the record's state one the
// algorithm can hold where it is the algorithm's.
func (d *decoder) global(ks *keyspace, i int32) {
	g := &globalState{algo: Op(d.Varint()), relaxed: d.Bool()}
	g.params = [3]int64{d.Varint(), d.Varint(), d.Varint()}
	if d.Err() != nil || checkGlobalKey("", g.algo, false, g.params) != nil ||
		(g.relaxed && !slices.Contains(GlobalRelaxedOps, g.algo)) {
		d.Fail("bad global key")
		return
	}
	d.globalBlocks(g)
	g.dropped, g.floor, g.floorAt, g.nextReq = d.Varint(), d.Varint(), d.Varint(), d.Varint()
	g.asked, g.askedAt, g.retry, g.share, g.bound = d.Varint(), d.Varint(), d.Varint(), d.Varint(), d.Varint()
	if d.Err() != nil || !validCount(g.dropped) || !validCount(g.floor) || !validTime(g.floorAt) ||
		g.nextReq < 1 || g.asked < 0 || !validTime(g.askedAt) || g.retry < 0 || g.retry > MaxShareTTL || !validCount(g.share) || g.bound < 0 {
		d.Fail("bad global key state")
		return
	}
	d.peers(g)
	if d.Err() == nil && d.Bool() {
		d.home(g)
	}
	st, params := ks.records.at(i).state, ks.paramsOf(i)
	switch {
	case d.Err() != nil:
		return
	case g.relaxed && !validWindowed(g.algo, g.params, st), g.home != nil && g.home.live && !kinds[g.algo.kind()].valid(params, st, nil):
		d.Fail("bad global key state")
		return
	}
	ks.setGlobal(i, g)
}

// validWindowed reports whether st is a windowed algorithm's state.
func validWindowed(op Op, p, st [3]int64) bool {
	if op == OpFixed {
		return (fixedAlgorithm{}).valid(p, st, nil)
	}
	return (slidingAlgorithm{}).valid(p, st, nil)
}

// globalBlocks decodes a global key's blocks and reports.
func (d *decoder) globalBlocks(g *globalState) {
	n := d.Uvarint()
	if d.Err() != nil || n > maxGlobalBlocks {
		d.Fail("bad block count")
		return
	}
	for range n {
		b := globalBlock{id: d.Varint(), n: d.Varint(), used: d.Varint(), until: d.Varint()}
		if d.Err() != nil || b.id < 0 || !validCount(b.n) || b.used < 0 || b.used > b.n || !validTime(b.until) ||
			(len(g.blocks) > 0 && g.blocks[len(g.blocks)-1].until > b.until) {
			d.Fail("bad block")
			return
		}
		g.blocks = append(g.blocks, b)
	}
	n = d.Uvarint()
	if d.Err() != nil || n > maxGlobalRetired {
		d.Fail("bad report count")
		return
	}
	for range n {
		u := GlobalUse{ID: d.Varint(), Used: d.Varint(), Until: d.Varint()}
		if d.Err() != nil || u.ID < 1 || !validCount(u.Used) || !validTime(u.Until) {
			d.Fail("bad report")
			return
		}
		g.retired = append(g.retired, u)
	}
}

// peers decodes a relaxed key's other regions' counts.
func (d *decoder) peers(g *globalState) {
	n := d.Uvarint()
	if d.Err() != nil || n > MaxRegions {
		d.Fail("bad peer count")
		return
	}
	for range n {
		p := peerCount{region: string(d.Bytes(MaxRegionLen))}
		p.state = [3]int64{d.Varint(), d.Varint(), d.Varint()}
		p.peak = d.Varint()
		if d.Err() != nil || p.region == "" || !validWindowed(g.algo, g.params, p.state) || !validCount(p.peak) ||
			(len(g.peers) > 0 && g.peers[len(g.peers)-1].region >= p.region) {
			d.Fail("bad peer counts")
			return
		}
		g.peers = append(g.peers, p)
	}
}

// home decodes the home's side of a global key.
func (d *decoder) home(g *globalState) {
	h := &homeState{live: d.Bool(), lastID: d.Varint()}
	n := d.Uvarint()
	if d.Err() != nil || h.lastID < 0 || n > MaxRegions {
		d.Fail("bad home")
		return
	}
	for range n {
		l := regionLease{region: string(d.Bytes(MaxRegionLen))}
		v := []*int64{&l.req, &l.demand, &l.need, &l.seen, &l.granted, &l.refunded,
			&l.used, &l.floor, &l.floorOver, &l.answer.block, &l.answer.n, &l.answer.until, &l.answer.share,
			&l.answer.floor, &l.answer.dropped}
		for _, p := range v {
			*p = d.Varint()
			if *p < 0 && p != &l.demand {
				d.Fail("bad lease")
			}
		}
		m := d.Uvarint()
		if d.Err() != nil || l.region == "" || m > maxGlobalRetired+maxGlobalBlocks ||
			(len(h.leases) > 0 && h.leases[len(h.leases)-1].region >= l.region) {
			d.Fail("bad lease")
			return
		}
		for range m {
			l.answer.acked = append(l.answer.acked, d.Varint())
		}
		if m = d.Uvarint(); d.Err() != nil || m > maxGlobalOut {
			d.Fail("bad lease")
			return
		}
		for range m {
			l.out = append(l.out, outBlock{id: d.Varint(), n: d.Varint(), until: d.Varint(), wstart: d.Varint(), wlen: d.Varint()})
		}
		h.leases = append(h.leases, l)
	}
	g.home = h
}
