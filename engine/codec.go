package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// appendEntry appends the canonical encoding of record i as of now: its
// kind, key, parameters and state as varints, then the entries of its log
// still inside the window. Snapshots and the digest use it, so replicas that
// applied the same commands encode every key alike. A string that is not an
// integer is followed by its value.
func appendEntry(b []byte, ks *keyspace, i int32, now int64) []byte {
	kind := ks.kind(i)
	key := ks.key(i)
	b = append(b, byte(kind))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	for _, v := range ks.paramsOf(i) {
		b = binary.AppendVarint(b, v)
	}
	for _, v := range ks.records.at(i).state {
		b = binary.AppendVarint(b, v)
	}
	var log []logEntry
	if lk := kinds[kind].log; lk != nil {
		log = lk.liveLog(ks, i, now)
	}
	b = binary.AppendUvarint(b, uint64(len(log)))
	for _, le := range log {
		b = binary.AppendVarint(b, le.At)
		b = binary.AppendVarint(b, le.N)
	}
	if kind == KindString && ks.records.at(i).state[2] == 1 {
		v := ks.value(i)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return appendCollection(b, ks, i, kind)
}

// appendCollection appends a hash's fields and values, in order, or a
// list's elements, tail first, each after its count.
func appendCollection(b []byte, ks *keyspace, i int32, kind Kind) []byte {
	switch kind {
	case KindHash:
		h := ks.hashes[i]
		b = binary.AppendUvarint(b, uint64(len(h)))
		for _, f := range h {
			b = AppendPacked(AppendPacked(b, []byte(f.name)), []byte(f.value))
		}
	case KindList:
		l := ks.lists[i]
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, e := range l {
			b = AppendPacked(b, []byte(e))
		}
	}
	return b
}

// collection decodes what appendCollection wrote into record i.
func (d *decoder) collection(ks *keyspace, i int32, kind Kind) {
	if kind != KindHash && kind != KindList {
		return
	}
	n := d.uvarint()
	limit := uint64(MaxListLen)
	if kind == KindHash {
		limit = MaxHashFields
	}
	if d.err == nil && (n == 0 || n > limit || n > uint64(len(d.b))) {
		d.fail("bad collection length")
		return
	}
	var l []string
	for j := uint64(0); j < n && d.err == nil; j++ {
		if kind == KindList {
			l = append(l, string(d.bytes(MaxValue)))
			continue
		}
		name, value := d.bytes(MaxValue), d.bytes(MaxValue)
		if d.err == nil && ks.hashField(i, name) >= 0 {
			d.fail("a field twice")
		}
		ks.putHashField(i, name, value)
	}
	if kind == KindList {
		ks.setList(i, l)
	}
}

// AppendSnapshot appends the shard's state to b: its clock, then every
// record in order (a free one as a 0 byte, a key, even one expired but not
// yet reclaimed, as its entry), then the sections of sections.go. A restored
// shard is the same record for record, free list and cursors included, so
// that what depends on the layout (which keys an eviction examines) stays
// the same on every replica. RestoreShard reads it back.
//
// b is first grown to the exact size of the snapshot, so that encoding a
// large shard allocates its bytes once: grown as it fills, the buffer was
// copied again and again (five times its size allocated, most of the time
// spent copying), while the shard's applies wait for the snapshot.
func (s *Shard) AppendSnapshot(b []byte) []byte {
	ks := &s.keys
	sections := s.appendSettings(s.appendLayout(nil))
	b = slices.Grow(b, s.snapshotLen(len(sections)))
	b = binary.AppendVarint(b, s.now)
	b = binary.AppendUvarint(b, uint64(ks.records.len()))
	for i := range int32(ks.records.len()) {
		if ks.records.at(i).params == 0 {
			b = append(b, 0)
			continue
		}
		b = appendEntry(b, ks, i, s.now)
	}
	return append(b, sections...)
}

// snapshotLen is the length of the shard's snapshot, whose sections take
// sections bytes.
func (s *Shard) snapshotLen(sections int) int {
	ks := &s.keys
	n := varintLen(s.now) + uvarintLen(uint64(ks.records.len())) + sections
	var scratch []byte
	for i := range int32(ks.records.len()) {
		n += entryLen(ks, i, s.now, &scratch)
	}
	return n
}

// entryLen is the length of record i's entry in a snapshot (1 for a free
// record). An entry with nothing beside its record (no log, value or
// collection: almost every limiter) is sized from its fields, as
// appendEntry lays them out; another is encoded into scratch and measured.
func entryLen(ks *keyspace, i int32, now int64, scratch *[]byte) int {
	r := ks.records.at(i)
	if r.params == 0 {
		return 1
	}
	kind := ks.kind(i)
	if kinds[kind].log != nil || kind == KindString && r.state[2] == 1 || kind == KindHash || kind == KindList {
		*scratch = appendEntry((*scratch)[:0], ks, i, now)
		return len(*scratch)
	}
	klen := int(r.klen)
	if r.klen == longKey {
		klen = len(ks.long[i])
	}
	n := 1 + uvarintLen(uint64(klen)) + klen + 1 // kind, key, an empty log
	for _, v := range ks.paramsOf(i) {
		n += varintLen(v)
	}
	for _, v := range r.state {
		n += varintLen(v)
	}
	return n
}

// uvarintLen and varintLen are the lengths binary.AppendUvarint and
// binary.AppendVarint give v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

// maxSnapshotKey bounds a key read from a snapshot.
const maxSnapshotKey = 1 << 20

// ErrCorruptSnapshot reports snapshot bytes that do not decode to a valid
// shard state.
var ErrCorruptSnapshot = errors.New("corrupt shard snapshot")

// SnapshotFormat is the format AppendSnapshot writes: 2 has the sections of
// sections.go after the keys; 1, the format before them, had the live keys
// only.
const SnapshotFormat = 2

// RestoreShard rebuilds a shard from AppendSnapshot's bytes, written in
// format (1 or SnapshotFormat). Every value is checked against the bounds
// the algorithms rely on, so damaged bytes give an error, never a shard that
// could misbehave.
func RestoreShard(b []byte, format int) (*Shard, error) {
	if format < 1 || format > SnapshotFormat {
		return nil, fmt.Errorf("%w: format %d", ErrCorruptSnapshot, format)
	}
	d := decoder{b: b}
	s := NewShard()
	s.now = d.varint()
	n := d.uvarint()
	if d.err == nil && (s.now < 0 || s.now > MaxTime || n > uint64(len(b))) {
		d.fail("clock or key count out of range")
	}
	var free []int32 // the free records, in record order
	for i := uint64(0); i < n && d.err == nil; i++ {
		if len(d.b) > 0 && d.b[0] == 0 {
			d.b = d.b[1:]
			free = append(free, s.keys.records.grow())
			continue
		}
		d.entry(s)
	}
	switch {
	case format >= 2:
		d.sections(s, free)
	case len(free) > 0:
		d.fail("a free record in a format 1 snapshot")
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

// decoder reads varints and bytes, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// entry decodes one key into s.
func (d *decoder) entry(s *Shard) {
	if len(d.b) == 0 {
		d.fail("truncated")
		return
	}
	kind := Kind(d.b[0])
	d.b = d.b[1:]
	if kind == kindNone || kind >= kindCount {
		d.fail("unknown kind %d", kind)
		return
	}
	keepsLog := kinds[kind].log != nil
	klen := d.uvarint()
	if d.err != nil || klen > maxSnapshotKey || klen > uint64(len(d.b)) {
		d.fail("bad key length")
		return
	}
	key := d.b[:klen]
	d.b = d.b[klen:]
	var params, state [3]int64
	for i := range params {
		params[i] = d.varint()
	}
	for i := range state {
		state[i] = d.varint()
	}
	nlog := d.uvarint()
	if d.err == nil && (nlog > MaxLogLimit || (nlog > 0 && !keepsLog)) {
		d.fail("bad log length")
	}
	var log []logEntry
	if nlog > 0 && d.err == nil {
		log = make([]logEntry, nlog)
		for i := range log {
			log[i] = logEntry{At: d.varint(), N: d.varint()}
		}
	}
	var value []byte
	if kind == KindString && state[2] == 1 {
		value = d.bytes(MaxValue)
	}
	if d.err != nil {
		return
	}
	if !kinds[kind].valid(params, state, log) {
		d.fail("key %q: invalid parameters or state", key)
		return
	}
	if s.keys.find(key) >= 0 {
		d.fail("key %q twice", key)
		return
	}
	i := s.keys.add(key, kind, params) // the next record: the free list is empty until the layout section
	s.keys.records.at(i).state = state
	if s.keys.persists(i) {
		s.keys.persistent++
	}
	if log != nil {
		s.keys.setLog(i, log)
	}
	if kind == KindString && state[2] == 1 {
		s.keys.setValue(i, string(value), true)
	}
	d.collection(&s.keys, i, kind)
}

// bytes reads a length, at most limit, and that many bytes.
func (d *decoder) bytes(limit uint64) []byte {
	n := d.uvarint()
	if d.err != nil || n > limit || n > uint64(len(d.b)) {
		d.fail("bad length")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
