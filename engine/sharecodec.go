package engine

import "github.com/rlserver/rlserver/internal/wire"

// A share key's entry in a snapshot ends with its holders, as stored
// (expired reservations not yet dropped included, so that a restored
// replica holds, and is charged for, exactly what the others do):
//
//	holders      uvarint
//	each holder  id (uvarint length, bytes), demand varint,
//	             reservations uvarint, each: seq, rate, until varints
//
// A kind is a byte of the entry: a node of a release without share keys
// refuses a snapshot that holds one (an unknown kind), as it refuses an
// entry with RL.SHARE's op (cluster's ErrNewerEntry), rather than lose
// the grants in force.

// appendShares appends record i's holders.
func appendShares(b []byte, ks *keyspace, i int32) []byte {
	var holders []shareHolder
	if set := ks.shareSet(i); set != nil {
		holders = set.holders
	}
	b = wire.AppendUvarint(b, uint64(len(holders)))
	for _, h := range holders {
		b = wire.AppendString(b, h.id)
		b = wire.AppendVarint(b, h.demand)
		b = wire.AppendUvarint(b, uint64(len(h.res)))
		for _, r := range h.res {
			b = wire.AppendVarints(b, r.seq, r.rate, r.until)
		}
	}
	return b
}

// shares decodes what appendShares wrote into record i, checking what the
// algorithm relies on: holders sorted by id, each with 1 to
// maxReservations reservations in seq order up to the key's last seq,
// rates and demands within the bounds, and none expiring after the latest
// expiry the key's state names.
func (d *decoder) shares(ks *keyspace, i int32) {
	n := d.Uvarint()
	if d.Err() == nil && (n > MaxShareHolders || n > uint64(d.Len())) {
		d.Fail("bad holder count")
		return
	}
	st, params := ks.records.at(i).state, ks.paramsOf(i)
	holders := make([]shareHolder, 0, n)
	for range n {
		h := shareHolder{id: string(d.Bytes(MaxHolderLen)), demand: d.Varint()}
		nres := d.Uvarint()
		if d.Err() != nil || nres < 1 || nres > maxReservations || CheckHolder([]byte(h.id)) != nil ||
			(h.demand != UnknownDemand && !validCount(h.demand)) ||
			(len(holders) > 0 && holders[len(holders)-1].id >= h.id) {
			d.Fail("bad holder")
			return
		}
		prev := int64(0)
		for range nres {
			r := reservation{seq: d.Varint(), rate: d.Varint(), until: d.Varint()}
			if d.Err() != nil || r.seq <= prev || r.seq > st[0] || !validCount(r.rate) || r.until < 0 || r.until > st[1] {
				d.Fail("bad reservation")
				return
			}
			h.res, prev = append(h.res, r), r.seq
		}
		holders = append(holders, h)
	}
	if d.Err() != nil {
		return
	}
	ks.setShares(i, holders, params, st[0])
	// setShares names the latest expiry of the holders; the stored one,
	// which may be later (reservations dropped since), is the key's.
	ks.records.mut(i).state[1] = st[1]
}
