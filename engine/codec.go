package engine

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/internal/wire"
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
	b = wire.AppendBytes(b, key)
	params, state := ks.paramsOf(i), ks.records.at(i).state
	b = wire.AppendVarints(b, params[:]...)
	b = wire.AppendVarints(b, state[:]...)
	var log []logEntry
	if lk := kinds[kind].log; lk != nil {
		log = lk.liveLog(ks, i, now)
	}
	b = wire.AppendUvarint(b, uint64(len(log)))
	for _, le := range log {
		b = wire.AppendVarints(b, le.At, le.N)
	}
	if kind == KindString && ks.records.at(i).state[2] == 1 {
		b = wire.AppendString(b, ks.value(i))
	}
	return appendCollection(b, ks, i, kind)
}

// appendCollection appends a hash's fields and values, in order, or a
// list's elements, tail first, each after its count, a share key's
// holders (appendShares) or a global key's side state (appendGlobal).
func appendCollection(b []byte, ks *keyspace, i int32, kind Kind) []byte {
	switch kind {
	case KindShare:
		b = appendShares(b, ks, i)
	case KindGlobal:
		b = appendGlobal(b, ks, i)
	case KindHash:
		h := ks.fields(i)
		b = wire.AppendUvarint(b, uint64(len(h)))
		for _, f := range h {
			b = wire.AppendString(wire.AppendString(b, f.name), f.value)
		}
	case KindList:
		l := ks.list(i)
		b = wire.AppendUvarint(b, uint64(len(l)))
		for _, e := range l {
			b = wire.AppendString(b, e)
		}
	}
	return b
}

// collection decodes what appendCollection wrote into record i.
func (d *decoder) collection(ks *keyspace, i int32, kind Kind) {
	if kind != KindHash && kind != KindList {
		return
	}
	n := d.Uvarint()
	limit := uint64(maxListLen)
	if kind == KindHash {
		limit = maxHashFields
	}
	if d.Err() == nil && (n == 0 || n > limit || n > uint64(d.Len())) {
		d.Fail("bad collection length")
		return
	}
	var l []string
	for j := uint64(0); j < n && d.Err() == nil; j++ {
		if kind == KindList {
			l = append(l, string(d.Bytes(MaxValue)))
			continue
		}
		name, value := d.Bytes(MaxValue), d.Bytes(MaxValue)
		if d.Err() == nil && ks.hashField(i, name) >= 0 {
			d.Fail("a field twice")
		}
		ks.putHashField(i, name, value)
	}
	if kind == KindList {
		ks.setList(i, l)
	}
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
	if kinds[kind].log != nil || kind == KindString && r.state[2] == 1 || kind == KindHash || kind == KindList || kind == KindShare || kind == KindGlobal {
		*scratch = appendEntry((*scratch)[:0], ks, i, now)
		return len(*scratch)
	}
	klen := int(r.klen)
	if r.klen == longKey {
		klen = len(ks.longKey(i))
	}
	n := 1 + wire.UvarintLen(uint64(klen)) + klen + 1 // kind, key, an empty log
	for _, v := range ks.paramsOf(i) {
		n += wire.VarintLen(v)
	}
	for _, v := range r.state {
		n += wire.VarintLen(v)
	}
	return n
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
	d := decoder{Reader: wire.NewReader(b, ErrCorruptSnapshot)}
	s := NewShard()
	s.now = d.Varint()
	n := d.Uvarint()
	if d.Err() == nil && (s.now < 0 || s.now > MaxTime || n > uint64(len(b))) {
		d.Fail("clock or key count out of range")
	}
	if d.Err() == nil {
		// Sized for the keys at most the bytes can hold, not the count a
		// damaged snapshot may claim.
		s.keys.index.reserve(int(min(n, uint64(d.Len()/minEntryBytes))))
	}
	var free []int32 // the free records, in record order
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		if d.Len() > 0 && d.Rest()[0] == 0 {
			d.Byte()
			free = append(free, s.keys.records.grow())
			continue
		}
		d.entry(s)
	}
	if dup := d.window.flush(&s.keys); dup != nil {
		d.failf("key %q twice", dup)
	}
	switch {
	case format >= 2:
		d.sections(s, free)
	case len(free) > 0:
		d.Fail("a free record in a format 1 snapshot")
	}
	if d.Err() == nil && d.Len() != 0 {
		d.failf("%d trailing bytes", d.Len())
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	return s, nil
}

// minEntryBytes is the least a key's entry takes: its kind, its key's
// length, six varints and its log's length.
const minEntryBytes = 9

// decoder reads a snapshot: the shard's parts, each a method, over one
// wire.Reader whose errors wrap ErrCorruptSnapshot; window holds the keys
// created and not yet indexed (restoreindex.go).
type decoder struct {
	wire.Reader
	window indexWindow
}

// failf is Fail with a formatted message.
func (d *decoder) failf(format string, args ...any) {
	if d.Err() == nil {
		d.Fail(fmt.Sprintf(format, args...))
	}
}

// entry decodes one key into s.
func (d *decoder) entry(s *Shard) {
	if d.Len() == 0 {
		d.Fail("truncated")
		return
	}
	kind := Kind(d.Byte())
	if kind == kindNone || kind >= kindCount {
		d.failf("unknown kind %d", kind)
		return
	}
	keepsLog := kinds[kind].log != nil
	klen := d.Uvarint()
	if d.Err() != nil || klen > maxSnapshotKey || klen > uint64(d.Len()) {
		d.Fail("bad key length")
		return
	}
	key := d.Next(int(klen))
	var params, state [3]int64
	for i := range params {
		params[i] = d.Varint()
	}
	for i := range state {
		state[i] = d.Varint()
	}
	nlog := d.Uvarint()
	if d.Err() == nil && (nlog > MaxLogLimit || (nlog > 0 && !keepsLog)) {
		d.Fail("bad log length")
	}
	var log []logEntry
	if nlog > 0 && d.Err() == nil {
		log = make([]logEntry, nlog)
		for i := range log {
			log[i] = logEntry{At: d.Varint(), N: d.Varint()}
		}
	}
	var value []byte
	if kind == KindString && state[2] == 1 {
		value = d.Bytes(MaxValue)
	}
	if d.Err() != nil {
		return
	}
	if !kinds[kind].valid(params, state, log) {
		d.failf("key %q: invalid parameters or state", key)
		return
	}
	// The next record (the free list is empty until the layout section),
	// indexed restoreAhead keys later.
	i := s.keys.addUnindexed(key, kind, params)
	if dup := d.window.add(&s.keys, key, s.keys.hash(key), i); dup != nil {
		d.failf("key %q twice", dup)
		return
	}
	s.keys.records.mut(i).state = state
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
	switch kind {
	case KindShare:
		d.shares(&s.keys, i)
	case KindGlobal:
		d.global(&s.keys, i)
	}
}
