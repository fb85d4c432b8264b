package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// The region's side of the federation layer's ops: OpGlobalScan lists the
// global keys for the layer to renew and report, OpGlobalInstall records
// a home's grant (or a block of the partition floor), OpGlobalCounts
// records another region's counts of a relaxed key. A region's request
// ids come from its record (GlobalKey.NextReq) and move on only when a
// grant is installed, so whichever node leads the shard asks again with
// the same id, and the home answers a retry as it answered the first.

// MaxGlobalScan bounds the keys one OpGlobalScan lists.
const MaxGlobalScan = 10_000

// GlobalKey is one global key as OpGlobalScan lists it.
type GlobalKey struct {
	Key     []byte
	Algo    Op
	Params  [3]int64
	Relaxed bool
	// Strict: the id of the next lease request, the units asked for
	// ever, the units the live blocks hold, the earliest expiry among
	// them (0: none), the fair share last granted, the reports to send,
	// and the units to count that are not a block's.
	NextReq, Asked, Held, Expires, Share int64
	Retired                              []GlobalUse
	Floor, Dropped                       int64
	// State is a relaxed key's own counts, in its algorithm's layout.
	State [3]int64
}

// GlobalScan is OpGlobalScan's answer: the shard's time when it listed the
// keys, the cursor to continue from (0: done), and the keys.
type GlobalScan struct {
	Now, Cursor int64
	Keys        []GlobalKey
}

// GlobalScanCommand is the command that lists up to count global keys
// from cursor (0 to start).
func GlobalScanCommand(cursor, count int64) Command {
	return Command{Op: OpGlobalScan, Args: [4]int64{cursor, count}}
}

// globalScan answers OpGlobalScan: the keys, by record number, from the
// cursor, each as settling it at now would leave it (its expired blocks
// among its reports). It changes nothing, so that a node reads it from
// its replica (Inspect) rather than through the log every interval; the
// install that answers the request settles the key for real.
func (s *Shard) globalScan(now int64, c *Command, r *Result) {
	ks := &s.keys
	recs := make([]int32, 0, len(ks.globals))
	for i := range ks.globals {
		if int64(i) >= c.Args[0] {
			recs = append(recs, i)
		}
	}
	slices.Sort(recs)
	b := wire.AppendVarint(nil, now)
	next := int64(0)
	if int64(len(recs)) > c.Args[1] {
		next, recs = int64(recs[c.Args[1]]), recs[:c.Args[1]]
	}
	b = wire.AppendVarints(b, next, int64(len(recs)))
	for _, i := range recs {
		g := *ks.global(i)
		g.blocks, g.retired = slices.Clone(g.blocks), slices.Clone(g.retired)
		g.settle(now)
		b = appendGlobalKey(b, ks, i, &g, now)
	}
	r.Type, r.Text = ResBulk, string(b)
}

// appendGlobalKey encodes record i as a GlobalKey.
func appendGlobalKey(b []byte, ks *keyspace, i int32, g *globalState, now int64) []byte {
	b = wire.AppendBytes(b, ks.key(i))
	b = wire.AppendBool(b, g.relaxed)
	b = wire.AppendVarints(b, int64(g.algo), g.params[0], g.params[1], g.params[2])
	expires := int64(0)
	if len(g.blocks) > 0 {
		expires = g.blocks[0].until
	}
	st := ks.records.at(i).state
	b = wire.AppendVarints(b, g.nextReq, g.asked, g.held(), expires, g.share, g.floor, g.dropped,
		st[0], st[1], st[2], int64(len(g.retired)))
	for _, u := range g.retired {
		b = wire.AppendVarints(b, u.ID, u.Used, u.Until)
	}
	return b
}

// DecodeGlobalScan reads an OpGlobalScan's result. The keys alias res.
func DecodeGlobalScan(res *Result) (GlobalScan, error) {
	var sc GlobalScan
	if res.Type != ResBulk {
		return sc, errGlobalWire
	}
	r := wire.NewReader([]byte(res.Text), errGlobalWire)
	sc.Now, sc.Cursor = r.Varint(), r.Varint()
	n := r.Varint()
	if r.Err() != nil || n < 0 || n > MaxGlobalScan {
		return sc, errGlobalWire
	}
	for range n {
		k := GlobalKey{Key: r.Bytes(maxSnapshotKey), Relaxed: r.Bool()}
		k.Algo = Op(r.Varint())
		k.Params = [3]int64{r.Varint(), r.Varint(), r.Varint()}
		k.NextReq, k.Asked, k.Held, k.Expires, k.Share = r.Varint(), r.Varint(), r.Varint(), r.Varint(), r.Varint()
		k.Floor, k.Dropped = r.Varint(), r.Varint()
		k.State = [3]int64{r.Varint(), r.Varint(), r.Varint()}
		m := r.Varint()
		if r.Err() != nil || m < 0 || int(m) > r.Len() {
			return sc, errGlobalWire
		}
		for range m {
			k.Retired = append(k.Retired, GlobalUse{ID: r.Varint(), Used: r.Varint(), Until: r.Varint()})
		}
		sc.Keys = append(sc.Keys, k)
	}
	if r.Err() != nil || r.Len() != 0 {
		return sc, errGlobalWire
	}
	return sc, nil
}

// globalInstall applies OpGlobalInstall: Int 1 when the grant was
// recorded, 0 when it answers a request the region no longer waits for
// (an earlier id: another node recorded it already, or the key was
// forgotten since).
func (s *Shard) globalInstall(now int64, c *Command, r *Result) {
	q, _ := globalInstallOf(c)
	i, g, err := s.globalFor(now, c.Key, q.Algo, false, q.Params)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	r.Type = ResInt
	g.settle(now)
	if q.Seal {
		for _, b := range g.blocks {
			g.retire(b)
		}
		g.blocks = g.blocks[:0]
	}
	if q.Req != 0 && q.Req == g.nextReq && !q.Grant.Stale {
		a := q.Grant
		g.nextReq = leaseID(g.nextReq, now)
		// The blocks reported are done with, even one a refund since the
		// scan gave units back to: the home has counted what it used.
		done := func(id int64) bool { return slices.Contains(a.Acked, id) }
		g.retired = slices.DeleteFunc(g.retired, func(u GlobalUse) bool { return done(u.ID) })
		g.blocks = slices.DeleteFunc(g.blocks, func(b globalBlock) bool { return done(b.id) })
		g.floor, g.dropped = max(g.floor-a.Floor, 0), max(g.dropped-a.Dropped, 0)
		g.share = a.Share
		if a.Block > 0 {
			g.addBlock(globalBlock{id: a.Block, n: a.Units, until: q.Base + a.TTL})
		}
		r.Int = 1
	}
	if q.FloorUnits > 0 && q.FloorUntil > now {
		g.blocks = slices.DeleteFunc(g.blocks, func(b globalBlock) bool { return b.id == 0 })
		g.addBlock(globalBlock{n: q.FloorUnits, until: q.FloorUntil})
	}
	if q.Retry > 0 {
		g.retry = q.Retry
	}
	g.settle(now)
	s.keys.recharge(i)
}

// globalCounts applies OpGlobalCounts: another region's counts of a
// relaxed key, merged (mergePeer), and the overshoot bound.
func (s *Shard) globalCounts(now int64, c *Command, r *Result) {
	q, _ := globalCountsOf(c)
	i, g, err := s.globalFor(now, c.Key, q.Algo, true, q.Params)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	g.mergePeer(q.Region, q.State, q.Peak)
	g.bound = q.Bound
	s.keys.recharge(i)
	r.Type = ResOK
}
