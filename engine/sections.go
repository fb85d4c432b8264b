package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// A snapshot's keys are followed by sections, each a tag byte and its
// contents, in this order, each at most once:
//
//	'L' layout:   the free list (uvarint count, uvarint records) and the
//	              sweep and eviction cursors (uvarints); always written
//	'M' memory:   the memory limit (uvarint bytes) and policy (byte); only
//	              when one is set
//	'P' policies: see appendPolicies; only when there are some
//	'R' reservations: see reservecodec.go; only when there are some
//	'S' scripts:  see appendScripts; only when some are cached
//
// Format 1 snapshots, written before sections existed, end after their
// keys, with no free record among them. The digest covers the 'M', 'P', 'R'
// and 'S' sections: they decide answers, where the layout only decides the
// order of work.
const (
	sectionLayout   = 'L'
	sectionPolicies = 'P'
	sectionMemory   = 'M'
	sectionScripts  = 'S'
)

// appendLayout appends the shard's layout section.
func (s *Shard) appendLayout(b []byte) []byte {
	return layoutSection(b, s.keys.freeList(), s.keys.sweep, s.evictCursor)
}

// layoutSection appends a layout section: the free stack, bottom first,
// and the cursors.
func layoutSection(b []byte, free []int32, sweep, evict int) []byte {
	b = append(b, sectionLayout)
	b = wire.AppendUvarint(b, uint64(len(free)))
	for _, i := range free {
		b = wire.AppendUvarint(b, uint64(i))
	}
	b = wire.AppendUvarint(b, uint64(sweep))
	return wire.AppendUvarint(b, uint64(evict))
}

// appendSettings appends the memory, policies, reservations and scripts
// sections, when there is something to say.
func (s *Shard) appendSettings(b []byte) []byte {
	if s.memLimit != 0 || s.memPolicy != NoEviction {
		b = wire.AppendUvarint(append(b, sectionMemory), uint64(s.memLimit))
		b = append(b, byte(s.memPolicy))
	}
	if len(s.policies) > 0 {
		b = s.appendPolicies(append(b, sectionPolicies))
	}
	if s.res.written(s.now) {
		b = s.res.appendReservations(append(b, sectionReservations))
	}
	if len(s.scripts.byName) > 0 {
		b = s.scripts.appendScripts(append(b, sectionScripts))
	}
	return b
}

// policyFlagsByte is a policy's flags as its snapshot keeps them, one
// byte: 1 shadow, 2 global, 4 relaxed. A release before global keys wrote
// 0 or 1 there, and refuses a byte above: a global policy it would run as
// a local one.
func policyFlagsByte(f Flags) byte {
	var b byte
	if f&FlagShadow != 0 {
		b |= 1
	}
	if f&FlagGlobal != 0 {
		b |= 2
	}
	if f&FlagRelaxed != 0 {
		b |= 4
	}
	return b
}

// appendPolicies appends the shard's policies, in name order: their count,
// then each one's name, op, parameters, flags (policyFlagsByte) and
// previous op.
func (s *Shard) appendPolicies(b []byte) []byte {
	names := s.policyNames()
	b = wire.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		p := s.policies[n]
		b = wire.AppendString(b, n)
		b = append(b, byte(p.op))
		for _, v := range p.params {
			b = wire.AppendVarint(b, v)
		}
		b = append(b, policyFlagsByte(p.flags()), byte(p.previous))
	}
	return b
}

// policies decodes the policies section into s.
func (d *decoder) policies(s *Shard) {
	n := d.Uvarint()
	if d.Err() == nil && (n == 0 || n > uint64(d.Len())) { // written only when there are some
		d.Fail("bad policy count")
	}
	for j := uint64(0); j < n && d.Err() == nil; j++ {
		name := d.Bytes(maxPolicyName)
		if d.Err() != nil || d.Len() == 0 {
			d.Fail("truncated policy")
			return
		}
		op := Op(d.Byte())
		p := definition{op: op}
		for k := range p.params {
			p.params[k] = d.Varint()
		}
		if d.Err() != nil || d.Len() == 0 || d.Rest()[0] > 7 {
			d.Fail("bad policy")
			return
		}
		fl := d.Byte()
		p.shadow, p.global, p.relaxed = fl&1 != 0, fl&2 != 0, fl&4 != 0
		if d.Len() == 0 || (Op(d.Rest()[0]) != opNone && !policyOp(Op(d.Rest()[0]))) {
			d.Fail("bad policy")
			return
		}
		previous := Op(d.Byte())
		set := Command{Op: OpPolicySet, Flags: p.flags(), Value: name, Args: [4]int64{p.params[0], p.params[1], p.params[2], int64(op)}}
		if _, dup := s.policies[string(name)]; dup || !set.Valid() {
			d.failf("policy %q: invalid or twice", name)
			return
		}
		s.policies[string(name)] = &policy{definition: p, previous: previous}
	}
}

// sections decodes what follows the keys into s; free lists the free
// records the keys section held.
func (d *decoder) sections(s *Shard, free []int32) {
	if d.Err() != nil {
		return
	}
	if d.Len() == 0 || d.Rest()[0] != sectionLayout {
		d.Fail("no layout section")
		return
	}
	last := byte(0)
	for d.Err() == nil && d.Len() > 0 {
		tag := d.Byte()
		if tag <= last || (tag != sectionLayout && tag != sectionPolicies && tag != sectionMemory && tag != sectionScripts &&
			tag != sectionReservations) {
			d.failf("section %q out of place", tag)
			return
		}
		last = tag
		switch tag {
		case sectionLayout:
			d.layout(s, free)
		case sectionPolicies:
			d.policies(s)
		case sectionScripts:
			d.scripts(s)
		case sectionReservations:
			d.reservations(s)
		case sectionMemory:
			limit := d.Uvarint()
			if d.Err() != nil || d.Len() == 0 || d.Rest()[0] >= byte(memoryPolicies) || limit > 1<<62 {
				d.Fail("bad memory section")
				return
			}
			s.memLimit, s.memPolicy = int64(limit), MemoryPolicy(d.Byte())
		}
	}
}

// layout decodes the layout section: the free list must name exactly the
// free records, and the cursors must be within the records.
func (d *decoder) layout(s *Shard, free []int32) {
	ks := &s.keys
	n := d.Uvarint()
	if d.Err() != nil || n != uint64(len(free)) {
		d.failf("free list of %d records, %d free", n, len(free))
		return
	}
	list := make([]int32, n)
	for j := range list {
		v := d.Uvarint()
		if v >= uint64(ks.records.len()) {
			d.Fail("free record out of range")
			return
		}
		list[j] = int32(v)
	}
	sorted := slices.Clone(list)
	slices.Sort(sorted)
	if !slices.Equal(sorted, free) {
		d.Fail("free list does not match the free records")
		return
	}
	sweep, evict := d.Uvarint(), d.Uvarint()
	if d.Err() == nil && (sweep > uint64(ks.records.len()) || evict > uint64(ks.records.len())) {
		d.Fail("cursor out of range")
		return
	}
	for _, i := range list {
		ks.pushFree(i)
	}
	ks.sweep, s.evictCursor = int(sweep), int(evict)
}
