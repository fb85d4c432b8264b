package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// The reservations section of a snapshot ('R', sections.go), written when
// the shard keeps reservations or has handed out a seq a later one must
// exceed:
//
//	last          varint   the latest seq handed out
//	count         uvarint
//	each, by seq  seq varint, key (uvarint length, bytes), op byte,
//	              params, estimate, at, until (varints), settled bool;
//	              settled: settledAt, actual (varints), the outcome's
//	              allowed bool and limit, remaining, retry, reset (varints)
//
// A node of a release without reservations refuses a snapshot with this
// section (an unknown section), as it refuses an entry with RL.RESERVE's
// op (cluster's ErrNewerEntry), rather than lose them.

// sectionReservations tags the section.
const sectionReservations = 'R'

// written reports whether the section is to be written at now.
func (rs *reservedCharges) written(now int64) bool {
	return len(rs.byID) > 0 || rs.last >= now<<leaseIDShift
}

// appendReservations appends the section's contents.
func (rs *reservedCharges) appendReservations(b []byte) []byte {
	seqs := make([]int64, 0, len(rs.byID))
	for seq := range rs.byID {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	b = wire.AppendVarint(b, rs.last)
	b = wire.AppendUvarint(b, uint64(len(seqs)))
	for _, seq := range seqs {
		r := rs.byID[seq]
		b = wire.AppendVarint(b, seq)
		b = wire.AppendString(b, r.key)
		b = append(b, byte(r.op))
		b = wire.AppendVarints(b, r.params[0], r.params[1], r.params[2], r.estimate, r.at, r.until)
		b = wire.AppendBool(b, r.settled)
		if r.settled {
			d := r.outcome
			b = wire.AppendVarints(b, r.settledAt, r.actual)
			b = wire.AppendBool(b, d.Allowed)
			b = wire.AppendVarints(b, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
		}
	}
	return b
}

// reservations decodes the section into s, checking what settling relies
// on: seqs increasing up to the last, a decision its algorithm may make
// with the estimate as its cost, a TTL within bounds, a settlement within
// it.
func (d *decoder) reservations(s *Shard) {
	rs := &s.res
	rs.last = d.Varint()
	n := d.Uvarint()
	if d.Err() == nil && (rs.last < 0 || n > uint64(d.Len())) {
		d.Fail("bad reservation count")
		return
	}
	prev := int64(0)
	for range n {
		seq := d.Varint()
		r := &reservedCharge{key: string(d.Bytes(maxSnapshotKey))}
		if d.Err() != nil || d.Len() == 0 {
			d.Fail("truncated reservation")
			return
		}
		r.op = Op(d.Byte())
		r.params[0], r.params[1], r.params[2], r.estimate, r.at, r.until = d.Varint(), d.Varint(), d.Varint(), d.Varint(), d.Varint(), d.Varint()
		r.settled = d.Bool()
		if r.settled {
			r.settledAt, r.actual = d.Varint(), d.Varint()
			r.outcome.Allowed = d.Bool()
			r.outcome.Limit, r.outcome.Remaining, r.outcome.RetryAfter, r.outcome.ResetAfter = d.Varint(), d.Varint(), d.Varint(), d.Varint()
		}
		if d.Err() != nil || seq <= prev || seq > rs.last || !r.valid() {
			d.Fail("bad reservation")
			return
		}
		rs.add(seq, r, s.now)
		prev = seq
	}
}

// valid reports whether r, read from a snapshot, is one RL.RESERVE and
// RL.SETTLE could have made.
func (r *reservedCharge) valid() bool {
	run := ReserveCommand(r.op, []byte(r.key), r.params, r.estimate, r.until-r.at)
	return validTime(r.at) && r.until > r.at && run.Valid() && // the empty key is a key, as in Redis
		(!r.settled || r.settledAt >= r.at && r.settledAt < r.until && validCount(r.actual))
}
