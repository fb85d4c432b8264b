package engine

import (
	"encoding/binary"
	"slices"
)

// A snapshot's keys are followed by sections, each a tag byte and its
// contents, in this order, each at most once:
//
//	'L' layout:   the free list (uvarint count, uvarint records) and the
//	              sweep and eviction cursors (uvarints); always written
//	'M' memory:   the memory limit (uvarint bytes) and policy (byte); only
//	              when one is set
//	'P' policies: see appendPolicies; only when there are some
//	'S' scripts:  see appendScripts; only when some are cached
//
// Format 1 snapshots, written before sections existed, end after their
// keys, with no free record among them. The digest covers the 'M', 'P' and
// 'S' sections: they decide answers, where the layout only decides the
// order of work.
const (
	sectionLayout   = 'L'
	sectionPolicies = 'P'
	sectionMemory   = 'M'
	sectionScripts  = 'S'
)

// appendLayout appends the layout section.
func (s *Shard) appendLayout(b []byte) []byte {
	ks := &s.keys
	b = append(b, sectionLayout)
	b = binary.AppendUvarint(b, uint64(len(ks.free)))
	for _, i := range ks.free {
		b = binary.AppendUvarint(b, uint64(i))
	}
	b = binary.AppendUvarint(b, uint64(ks.sweep))
	return binary.AppendUvarint(b, uint64(s.evictCursor))
}

// appendSettings appends the policies and memory sections, when there is
// something to say.
func (s *Shard) appendSettings(b []byte) []byte {
	if s.memLimit != 0 || s.memPolicy != NoEviction {
		b = binary.AppendUvarint(append(b, sectionMemory), uint64(s.memLimit))
		b = append(b, byte(s.memPolicy))
	}
	if len(s.policies) > 0 {
		b = s.appendPolicies(append(b, sectionPolicies))
	}
	if len(s.scripts.byName) > 0 {
		b = s.scripts.appendScripts(append(b, sectionScripts))
	}
	return b
}

// appendPolicies appends the shard's policies, in name order: their count,
// then each one's name, op, parameters, shadow mode and previous op.
func (s *Shard) appendPolicies(b []byte) []byte {
	names := s.policyNames()
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		p := s.policies[n]
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = append(b, byte(p.op))
		for _, v := range p.params {
			b = binary.AppendVarint(b, v)
		}
		shadow := byte(0)
		if p.shadow {
			shadow = 1
		}
		b = append(b, shadow, byte(p.previous))
	}
	return b
}

// policies decodes the policies section into s.
func (d *decoder) policies(s *Shard) {
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > uint64(len(d.b))) { // written only when there are some
		d.fail("bad policy count")
	}
	for j := uint64(0); j < n && d.err == nil; j++ {
		name := d.bytes(MaxPolicyName)
		if d.err != nil || len(d.b) == 0 {
			d.fail("truncated policy")
			return
		}
		op := Op(d.b[0])
		d.b = d.b[1:]
		p := definition{op: op}
		for k := range p.params {
			p.params[k] = d.varint()
		}
		if d.err != nil || len(d.b) == 0 || d.b[0] > 1 {
			d.fail("bad policy")
			return
		}
		p.shadow = d.b[0] == 1
		d.b = d.b[1:]
		if len(d.b) == 0 || (Op(d.b[0]) != opNone && !policyOp(Op(d.b[0]))) {
			d.fail("bad policy")
			return
		}
		previous := Op(d.b[0])
		d.b = d.b[1:]
		set := Command{Op: OpPolicySet, Value: name, Args: [4]int64{p.params[0], p.params[1], p.params[2], int64(op)}}
		if _, dup := s.policies[string(name)]; dup || !set.Valid() {
			d.fail("policy %q: invalid or twice", name)
			return
		}
		s.policies[string(name)] = &policy{definition: p, previous: previous}
	}
}

// sections decodes what follows the keys into s; free lists the free
// records the keys section held.
func (d *decoder) sections(s *Shard, free []int32) {
	if d.err != nil {
		return
	}
	if len(d.b) == 0 || d.b[0] != sectionLayout {
		d.fail("no layout section")
		return
	}
	last := byte(0)
	for d.err == nil && len(d.b) > 0 {
		tag := d.b[0]
		d.b = d.b[1:]
		if tag <= last || (tag != sectionLayout && tag != sectionPolicies && tag != sectionMemory && tag != sectionScripts) {
			d.fail("section %q out of place", tag)
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
		case sectionMemory:
			limit := d.uvarint()
			if d.err != nil || len(d.b) == 0 || d.b[0] >= byte(memoryPolicies) || limit > 1<<62 {
				d.fail("bad memory section")
				return
			}
			s.memLimit, s.memPolicy = int64(limit), MemoryPolicy(d.b[0])
			d.b = d.b[1:]
		}
	}
}

// layout decodes the layout section: the free list must name exactly the
// free records, and the cursors must be within the records.
func (d *decoder) layout(s *Shard, free []int32) {
	ks := &s.keys
	n := d.uvarint()
	if d.err != nil || n != uint64(len(free)) {
		d.fail("free list of %d records, %d free", n, len(free))
		return
	}
	list := make([]int32, n)
	for j := range list {
		v := d.uvarint()
		if v >= uint64(ks.records.len()) {
			d.fail("free record out of range")
			return
		}
		list[j] = int32(v)
	}
	sorted := slices.Clone(list)
	slices.Sort(sorted)
	if !slices.Equal(sorted, free) {
		d.fail("free list does not match the free records")
		return
	}
	sweep, evict := d.uvarint(), d.uvarint()
	if d.err == nil && (sweep > uint64(ks.records.len()) || evict > uint64(ks.records.len())) {
		d.fail("cursor out of range")
		return
	}
	ks.free, ks.sweep, s.evictCursor = list, int(sweep), int(evict)
}
