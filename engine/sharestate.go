package engine

import (
	"cmp"
	"math"
	"slices"
)

// A share key's holders, kept in its chunk's extras beside its record.

// shareSet is a share key's holders, sorted by id, and what they are
// charged to the memory limit (sharesBytes) as last stored.
type shareSet struct {
	holders []shareHolder
	charged int64
}

// shareHolder is one holder of a share key.
type shareHolder struct {
	id     string
	demand int64         // units per window, or UnknownDemand
	res    []reservation // by seq; never empty in a stored holder
}

// reservation is one grant a holder may still be using: rate units per
// window, until the instant until (exclusive), or until the holder
// acknowledges a later seq.
type reservation struct{ seq, rate, until int64 }

// What a share key's holders are charged beyond their ids, as literals
// (see recordSize): a holder's id, demand and slice, a reservation's three
// words, and the set itself with its map entry.
const (
	shareHolderSize = 48
	reservationSize = 24
	shareSetSize    = 80
)

// sharesBytes is what holders are charged.
func sharesBytes(holders []shareHolder) int64 {
	n := int64(shareSetSize)
	for _, h := range holders {
		n += shareHolderSize + int64(len(h.id)) + reservationSize*int64(len(h.res))
	}
	return n
}

// shareCounts are the shard's counters of RL.SHARE, for INFO and metrics.
type shareCounts struct {
	grants   int64 // RL.SHARE requests answered with a grant (of any rate, 0 included)
	returned int64 // committed units freed before they expired: RL.UNSHARE and ACK
	lapsed   int64 // holders dropped because every reservation of theirs expired
}

// committed is a holder's committed rate: the largest of its reservations
// in force at now.
func (h *shareHolder) committed(now int64) int64 {
	c, _ := h.inForce(now)
	return c
}

// liveShares counts the holders with a reservation in force at now, and
// adds up their committed rates (saturating: a limit lowered under old
// grants may leave more committed than any limit).
func liveShares(holders []shareHolder, now int64) (n, committed int64) {
	for j := range holders {
		if c, live := holders[j].inForce(now); live {
			n, committed = n+1, satAdd(committed, c)
		}
	}
	return n, committed
}

// inForce is the holder's committed rate at now, and whether any of its
// reservations is still in force then.
func (h *shareHolder) inForce(now int64) (committed int64, live bool) {
	for _, r := range h.res {
		if r.until > now {
			committed, live = max(committed, r.rate), true
		}
	}
	return committed, live
}

// shares returns record i's holders in force at now: it drops the
// reservations that expired, and the holders left without one (counted as
// lapsed), storing the result. The slice is the stored one: change it,
// then store it with setShares.
func (ks *keyspace) shares(i int32, now int64) []shareHolder {
	if ks.shareSet(i) == nil {
		return nil
	}
	set := ks.records.extMut(i).shares[i]
	kept := set.holders[:0]
	for _, h := range set.holders {
		h.res = slices.DeleteFunc(h.res, func(r reservation) bool { return r.until <= now })
		if len(h.res) == 0 {
			ks.shareStat.lapsed++
			continue
		}
		kept = append(kept, h)
	}
	clear(set.holders[len(kept):])
	charged := sharesBytes(kept)
	ks.shareLen += charged - set.charged
	set.holders, set.charged = kept, charged
	return kept
}

// setShares stores holders as record i's, with the last seq granted: its
// state is then the seq and the latest expiry among the reservations.
func (ks *keyspace) setShares(i int32, holders []shareHolder, params [3]int64, lastSeq int64) {
	e := ks.records.extMut(i)
	set := e.shares[i]
	if set == nil {
		set = &shareSet{}
		if e.shares == nil {
			e.shares = make(map[int32]*shareSet)
		}
		e.shares[i] = set
		ks.nShares++
	}
	charged := sharesBytes(holders)
	ks.shareLen += charged - set.charged
	set.holders, set.charged = holders, charged
	var latest int64
	for _, h := range holders {
		for _, r := range h.res {
			latest = max(latest, r.until)
		}
	}
	ks.set(i, KindShare, params, [3]int64{lastSeq, latest, 0})
}

// dropShares forgets record i's holders.
func (ks *keyspace) dropShares(i int32) {
	if set := ks.shareSet(i); set != nil {
		ks.shareLen -= set.charged
		ks.nShares--
		delete(ks.records.extMut(i).shares, i)
	}
}

// expire removes record i, which has expired: a share key's holders are
// counted as lapsed.
func (ks *keyspace) expire(i int32) {
	if set := ks.shareSet(i); set != nil {
		ks.shareStat.lapsed += int64(len(set.holders))
	}
	ks.remove(i)
}

// findHolder returns where id is, or belongs, among holders (sorted by id).
func findHolder(holders []shareHolder, id []byte) (int, bool) {
	return slices.BinarySearchFunc(holders, id, func(h shareHolder, id []byte) int {
		return cmp.Compare(h.id, string(id))
	})
}

// addReservation appends r, the holder's newest grant, to res. Older
// reservations r covers (no higher rate, no later expiry) go: whatever
// expires or is acknowledged, the holder's committed rate is the same
// without them. Past maxReservations, the two oldest are merged into one
// with the higher rate, the later expiry and the later seq: a holder that
// never acknowledges is charged more, for longer, never less.
func addReservation(res []reservation, r reservation) []reservation {
	res = slices.DeleteFunc(res, func(o reservation) bool { return o.rate <= r.rate && o.until <= r.until })
	res = append(res, r)
	for len(res) > maxReservations {
		res[1] = reservation{seq: res[1].seq, rate: max(res[0].rate, res[1].rate), until: max(res[0].until, res[1].until)}
		res = slices.Delete(res, 0, 1)
	}
	return res
}

// acknowledge drops the reservations older than seq ack, the grant the
// holder says it now uses, and returns the committed units that frees. An
// ack beyond the holder's latest grant counts as that grant's: a holder
// always keeps its latest reservation until it expires or the holder
// unshares.
func (h *shareHolder) acknowledge(ack, now int64) int64 {
	before := h.committed(now)
	upto := min(ack, h.res[len(h.res)-1].seq)
	h.res = slices.DeleteFunc(h.res, func(r reservation) bool { return r.seq < upto })
	return before - h.committed(now)
}

// rescale converts the holders' rates and demands from units per window
// from to units per window to, rounding rates up: an old grant's holder
// goes on admitting at its old pace, which the new unit must not
// undercount. Rates saturate at MaxCount, above any limit, where a grant
// already takes the whole budget.
func rescale(holders []shareHolder, from, to int64) {
	convert := func(v int64) int64 { return min(mulDivCeil(v, to, from), MaxCount) }
	for j := range holders {
		h := &holders[j]
		if h.demand != UnknownDemand {
			h.demand = convert(h.demand)
		}
		for k := range h.res {
			h.res[k].rate = convert(h.res[k].rate)
		}
	}
}

// fairShares sets targets[j] to holder j's fair share of limit, in two
// rounds of max-min water-filling (waterFill). The first fills the
// holders' demands, an unknown one being unbounded: when they ask for more
// than the limit, that is the max-min fair split. When they ask for less,
// the second hands out what is left the same way, each holder up to its
// cap, max(2 × demand, ⌈limit/n⌉) for n holders: room to double its demand
// before its next renewal, and at least an equal split. wants and extra
// are scratch of len(holders), as keys is waterFill's.
func fairShares(limit int64, holders []shareHolder, wants []int64, keys []uint64, targets, extra []int64) {
	n := int64(len(holders))
	for j, h := range holders {
		wants[j] = math.MaxInt64
		if h.demand != UnknownDemand {
			wants[j] = h.demand
		}
	}
	left := waterFill(limit, wants, keys, targets)
	if left == 0 {
		return
	}
	for j, h := range holders { // every demand is known and met
		wants[j] = max(2*h.demand, (limit+n-1)/n) - targets[j]
	}
	waterFill(left, wants, keys, extra)
	for j := range targets {
		targets[j] += extra[j]
	}
}

// waterFill splits total among wants, max-min fair, into got, and returns
// what is left once every want is met. Wants below an equal split of what
// is left are met; the others split the rest equally, the units that do
// not divide going one each to the first of them in holder (id) order, so
// that every replica splits alike. keys is scratch of len(wants).
func waterFill(total int64, wants []int64, keys []uint64, got []int64) (left int64) {
	// Sorted as wants and holder numbers packed in one word each: a want
	// of more than the total is as good as unbounded, and that bound (at
	// most MaxCount) needs fewer bits than 64 - holderBits.
	for j, w := range wants {
		keys[j] = uint64(min(w, total+1))<<holderBits | uint64(j)
	}
	slices.Sort(keys)
	left, k := total, int64(len(wants))
	for x, key := range keys {
		if j, w := int(key&holderMask), int64(key>>holderBits); w <= left/k {
			got[j], left, k = w, left-w, k-1
			continue
		}
		rest := keys[x:]
		for y := range rest {
			rest[y] &= holderMask // holder numbers: id order
		}
		slices.Sort(rest)
		for y, j := range rest {
			got[j] = left / k
			if int64(y) < left%k {
				got[j]++
			}
		}
		return 0
	}
	return left
}

// holderBits holds a holder's number among a key's (below MaxShareHolders)
// in waterFill's sort keys.
const (
	holderBits = 10
	holderMask = 1<<holderBits - 1
	_          = uint(holderMask + 1 - MaxShareHolders) // MaxShareHolders fits
)

// shareKind is a share key: it exists while a reservation is in force, and
// at least until the millisecond after its last seq's, so that its seqs
// never repeat (see leaseID).
type shareKind struct{}

func (shareKind) expiresAt(ks *keyspace, i int32) int64 {
	st := ks.records.at(i).state
	return max(st[1], st[0]>>leaseIDShift+1)
}

func (shareKind) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	p := ks.paramsOf(i)
	var holders, committed int64
	if set := ks.shareSet(i); set != nil {
		holders, committed = liveShares(set.holders, now)
	}
	return append(f, Field{Name: "limit", Int: p[0]}, Field{Name: "window_ms", Int: p[1]},
		Field{Name: "holders", Int: holders}, Field{Name: "committed", Int: committed},
		Field{Name: "free", Int: max(p[0]-committed, 0)}, Field{Name: "ttl_ms", Int: ks.expiresAt(i) - now})
}

// valid checks a share key's record; its holders are checked as they are
// read (decoder.shares).
func (shareKind) valid(params, st [3]int64, log []logEntry) bool {
	return pLimit.Check(params[0]) == nil && pWindow.Check(params[1]) == nil && params[2] == 0 &&
		st[0] >= 1 && st[0] <= (MaxTime+MaxShareTTL)<<leaseIDShift && st[1] >= 0 && st[1] <= MaxTime+MaxShareTTL &&
		st[2] == 0 && len(log) == 0
}
