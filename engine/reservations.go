package engine

import (
	"container/heap"
	"slices"
)

// A shard's reservations (RL.RESERVE) are kept beside its keys, by seq: a
// reservation outlives what happens to its key (expiry, DEL, a key of
// another algorithm under the name), and is found again by the seq and key
// its id names. Each has one pending event in a queue ordered by time, then
// seq, so that every replica processes the same events at the same
// instants: a pending reservation's TTL, at which it is settled at its
// estimate (nothing to change: the estimate is what was charged), and the
// moment it is forgotten, reservationKept after it was settled or expired.
// Until then a repeated RL.SETTLE answers the first outcome.

// reservedCharge is one RL.RESERVE's charge, and its settlement.
type reservedCharge struct {
	key      string
	op       Op
	params   [3]int64
	estimate int64
	at       int64 // when it was made
	until    int64 // when its TTL ends: settled at its estimate then
	settled  bool
	// settledAt, actual and outcome are the settlement's: its time, the
	// actual cost and the reply, which a repeated RL.SETTLE answers.
	settledAt, actual int64
	outcome           Decision
	next              int64 // its pending event's time (see next)
}

// next is when r's next event is due: its TTL while it is pending, then
// the moment it is forgotten.
func (r *reservedCharge) nextEvent(now int64) int64 {
	switch {
	case r.settled:
		return satAdd(r.settledAt, reservationKept)
	case now < r.until:
		return r.until
	}
	return satAdd(r.until, reservationKept)
}

// pending reports whether r is neither settled nor past its TTL at now.
func (r *reservedCharge) pending(now int64) bool { return !r.settled && now < r.until }

// reservationBytes is what a reservation is charged beyond its key's bytes:
// the record, its map entries and its event.
const reservationBytes = 160

// reservedCharges is a shard's reservations.
type reservedCharges struct {
	last   int64 // the latest seq handed out
	byID   map[int64]*reservedCharge
	byKey  map[string][]int64 // the seqs of each key's reservations, in order
	events eventQueue
	bytes  int64 // charged, as the memory limit counts (charged())
	// Counters, of this process, like the share keys': reservations made,
	// settled by RL.SETTLE, and settled at their estimate at their TTL.
	made, settled, expired int64
}

func newReservedCharges() reservedCharges {
	return reservedCharges{byID: make(map[int64]*reservedCharge), byKey: make(map[string][]int64)}
}

// add keeps r under seq, which is later than every seq kept.
func (rs *reservedCharges) add(seq int64, r *reservedCharge, now int64) {
	rs.last = max(rs.last, seq)
	rs.byID[seq] = r
	rs.byKey[r.key] = append(rs.byKey[r.key], seq)
	rs.bytes += int64(len(r.key)) + reservationBytes
	rs.schedule(seq, r, now)
}

// schedule queues r's next event.
func (rs *reservedCharges) schedule(seq int64, r *reservedCharge, now int64) {
	r.next = r.nextEvent(now)
	heap.Push(&rs.events, event{at: r.next, seq: seq})
}

// find returns the reservation seq of key, nil when there is none or it
// has been forgotten by now.
func (rs *reservedCharges) find(key []byte, seq, now int64) *reservedCharge {
	r := rs.byID[seq]
	if r == nil || r.key != string(key) || (!r.pending(now) && now >= r.nextEvent(now)) {
		return nil
	}
	return r
}

// settle records r's settlement.
func (rs *reservedCharges) settle(seq int64, r *reservedCharge, now, actual int64, d Decision) {
	r.settled, r.settledAt, r.actual, r.outcome = true, now, actual, d
	rs.settled++
	rs.schedule(seq, r, now)
}

// process handles the events due by now: a TTL that ends settles its
// reservation at its estimate, and a reservation settled or expired long
// enough ago is forgotten. An event its reservation has moved past (it was
// settled before its TTL) is dropped.
func (rs *reservedCharges) process(now int64) {
	for len(rs.events) > 0 && rs.events[0].at <= now {
		e := heap.Pop(&rs.events).(event)
		r := rs.byID[e.seq]
		if r == nil || r.next != e.at {
			continue
		}
		if !r.settled && e.at == r.until {
			rs.expired++
			rs.schedule(e.seq, r, now)
			continue
		}
		rs.forget(e.seq, r)
	}
}

// forget drops reservation seq.
func (rs *reservedCharges) forget(seq int64, r *reservedCharge) {
	delete(rs.byID, seq)
	seqs := rs.byKey[r.key]
	if j := slices.Index(seqs, seq); j >= 0 {
		seqs = slices.Delete(seqs, j, j+1)
	}
	if len(seqs) == 0 {
		delete(rs.byKey, r.key)
	} else {
		rs.byKey[r.key] = seqs
	}
	rs.bytes -= int64(len(r.key)) + reservationBytes
}

// flush forgets every reservation (FLUSHALL), keeping the counters and
// the last seq, which later ones must exceed.
func (rs *reservedCharges) flush() {
	fresh := newReservedCharges()
	fresh.last, fresh.made, fresh.settled, fresh.expired = rs.last, rs.made, rs.settled, rs.expired
	*rs = fresh
}

// outstanding is how many of key's reservedCharges are pending at now, and
// the sum of their estimates.
func (rs *reservedCharges) outstanding(key []byte, now int64) (n, units int64) {
	for _, seq := range rs.byKey[string(key)] {
		if r := rs.byID[seq]; r.pending(now) {
			n, units = n+1, satAdd(units, r.estimate)
		}
	}
	return n, units
}

// event is a reservation's next event: at, then seq, order them.
type event struct{ at, seq int64 }

// eventQueue is a min-heap of events (container/heap).
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
