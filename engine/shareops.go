package engine

import "slices"

// errShareFull refuses a new holder on a key that has MaxShareHolders.
var errShareFull = &Error{CodeParam, "a share key has at most 1000 holders"}

// share applies RL.SHARE: it drops what expired, frees what the holder
// acknowledges, records its demand, and grants it its fair share within
// what the other holders' committed rates leave of the limit, as a new
// reservation with the key's next seq. The reply is ShareReply's fields.
func (s *Shard) share(now int64, c *Command, r *Result) {
	q, _ := shareRequestOf(c) // Valid: commands and the codec checked it
	i := s.lookup(c.Key, now)
	if i >= 0 && s.keys.kind(i) != KindShare {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	if i < 0 {
		if err := s.admit(now, 1, nil); err != nil {
			r.Type, r.Err = ResError, err
			return
		}
		i = s.keys.add(c.Key, KindShare, [3]int64{q.Limit, q.Window})
	}
	ks := &s.keys
	holders := ks.shares(i, now)
	j, found := findHolder(holders, q.Holder)
	if !found && len(holders) >= MaxShareHolders {
		r.Type, r.Err = ResError, errShareFull
		return
	}
	if old := ks.paramsOf(i)[1]; old != q.Window {
		rescale(holders, old, q.Window)
	}
	if !found {
		holders = slices.Insert(holders, j, shareHolder{id: string(q.Holder)})
	}
	h := &holders[j]
	if q.Ack != 0 && found {
		ks.shareStat.returned += h.acknowledge(q.Ack, now)
	}
	h.demand = q.Demand
	rate, fair := s.grant(q.Limit, holders, j, now)
	seq := leaseID(ks.records.at(i).state[0], now)
	h.res = addReservation(h.res, reservation{seq: seq, rate: rate, until: now + q.TTL})
	ks.setShares(i, holders, [3]int64{q.Limit, q.Window}, seq)
	ks.shareStat.grants++
	r.Type = ResRecord
	r.Fields = []Field{{Name: ShareReply[0], Int: rate}, {Name: ShareReply[1], Int: shareBurst(rate, q.Burst, q.Window)},
		{Name: ShareReply[2], Int: q.TTL}, {Name: ShareReply[3], Int: seq},
		{Name: ShareReply[4], Int: fair}, {Name: ShareReply[5], Int: int64(len(holders))}}
}

// grant is the rate holder j may be granted: its fair share, within what
// the others' committed rates leave of the limit (never below 0); and that
// fair share. Its own reservations do not count: its new grant replaces
// them, and they stay committed beside it until it acknowledges the grant.
func (s *Shard) grant(limit int64, holders []shareHolder, j int, now int64) (rate, fair int64) {
	n := len(holders)
	if cap(s.shareTargets) < n {
		s.shareWants, s.shareKeys = make([]int64, n), make([]uint64, n)
		s.shareTargets, s.shareExtra = make([]int64, n), make([]int64, n)
	}
	targets := s.shareTargets[:n]
	fairShares(limit, holders, s.shareWants[:n], s.shareKeys[:n], targets, s.shareExtra[:n])
	var others int64
	for k := range holders {
		if k != j {
			others = satAdd(others, holders[k].committed(now))
		}
	}
	return max(min(targets[j], limit-others), 0), targets[j]
}

// unshare applies RL.UNSHARE: the holder's reservations are freed at once.
// Int 1 if it held a share in force, 0 if not.
func (s *Shard) unshare(now int64, c *Command, r *Result) {
	r.Type = ResInt
	i := s.lookup(c.Key, now)
	if i < 0 {
		return
	}
	if s.keys.kind(i) != KindShare {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	ks := &s.keys
	holders := ks.shares(i, now)
	j, found := findHolder(holders, c.Value)
	if !found {
		return
	}
	ks.shareStat.returned += holders[j].committed(now)
	holders = slices.Delete(holders, j, j+1)
	ks.setShares(i, holders, ks.paramsOf(i), ks.records.at(i).state[0])
	r.Int = 1
}
