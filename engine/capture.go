package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// A Capture is a shard's state frozen at one instant, which another
// goroutine encodes as a snapshot (AppendSnapshot's bytes) while the shard
// goes on applying commands. Taking one costs the shard a copy of its
// chunk pointers (two words and a half for 256 keys: 1 MiB at 30 million
// keys, well under a millisecond), never a pass over the keys.
//
// The capture keeps the chunks of records (recordStore) and their extras
// as they were; from then on the shard writes no chunk the capture still
// needs: before its first write to one, it copies the chunk (14 KiB) and
// its extras' maps, and writes the copy (recordStore.own); the slices a
// record holds (logs, hashes, lists, holders) are copied the first time
// the record is found (chunkExtras.ownValues). Chunks the capture has
// encoded already are no longer needed (CaptureProgress), and those it
// encoded are dropped from it as it goes, so the originals of the copies
// become garbage as the encoding passes them. The parameter sets its
// records name are not reused while a capture is in progress
// (paramTable.hold), and the free stack lives in the records. The
// sections after the keys (memory limit, policies, scripts, reservations:
// small beside the keys) are encoded when the capture is taken, and so is
// the side state of the global keys (few, and changed in place:
// keyspace.frozenGlobals).
//
// So a capture costs at most one copy of every chunk written during it,
// 56 bytes a key at worst (every chunk written before the encoding
// reaches it), plus what the records written hold in slices; the engine
// stays single-threaded: the shard's goroutine takes, advances and ends
// captures, and the goroutine that encodes one reads only what no one
// writes any more.
type Capture struct {
	view     keyspace // the records, extras and parameter sets as captured
	now      int64
	evict    int
	settings []byte // the sections after the layout
	tail     []byte // the layout and settings sections, once prepared
	size     int    // the payload's length, once prepared
	encoded  int    // parts appended
}

// copyOnWrite is a record store's bookkeeping of the captures in
// progress: which chunk copies they hold, and which chunks they still need.
type copyOnWrite struct {
	gens   []uint32 // by chunk: the epoch its live copy was made in
	epoch  uint32   // the latest capture's
	live   []liveCapture
	copies int64 // chunks copied for captures
	// spare are chunks no one holds any more, originals of copies that
	// their capture has encoded since: the next copies are made into them
	// rather than allocated, so that a capture does not make the collector
	// (paced for a heap of keys that barely grows) run every few megabytes.
	// When the last capture ends, up to a quarter of the chunks' worth are
	// kept for the next one, whose first copies come before any original
	// is spare.
	spare []*recordChunk
}

// liveCapture is a capture in progress, as the shard sees it.
type liveCapture struct {
	c     *Capture
	epoch uint32
	done  int32 // chunks it has encoded, which it needs no more
	// originals are the chunks copied while it alone was in progress, by
	// chunk: no other capture holds them, and once it has encoded one
	// (below released) its original is spare.
	originals map[int32]*recordChunk
	released  int32
}

// active reports whether a capture is in progress.
func (w *copyOnWrite) active() bool { return len(w.live) > 0 }

// added notes a new chunk, which no capture in progress holds.
func (w *copyOnWrite) added() { w.gens = append(w.gens, w.epoch) }

// needs reports whether a capture in progress still needs chunk c as it
// was: the live chunk is older than the capture and not yet encoded.
func (w *copyOnWrite) needs(c int32) bool {
	g := w.gens[c]
	for _, l := range w.live {
		if g < l.epoch && c >= l.done {
			return true
		}
	}
	return false
}

// owned notes that chunk c was just copied from orig.
func (w *copyOnWrite) owned(c int32, orig *recordChunk) {
	w.gens[c] = w.epoch
	w.copies++
	if len(w.live) == 1 {
		l := &w.live[0]
		if l.originals == nil {
			l.originals = make(map[int32]*recordChunk)
		}
		l.originals[c] = orig
	}
}

// chunk returns a chunk to copy into: a spare one, or a new one.
func (w *copyOnWrite) chunk() *recordChunk {
	if n := len(w.spare); n > 0 {
		c := w.spare[n-1]
		w.spare = w.spare[:n-1]
		return c
	}
	return new(recordChunk)
}

// progress notes that l has encoded its first done chunks: the originals
// among them are spare.
func (w *copyOnWrite) progress(l *liveCapture, done int32) {
	l.done = done
	for ; l.released < done; l.released++ {
		if o, ok := l.originals[l.released]; ok {
			w.spare = append(w.spare, o)
			delete(l.originals, l.released)
		}
	}
}

// Capture freezes the shard's state as of the last command applied, for
// the caller to encode (Size, AppendNext) on any goroutine while the shard
// goes on. Call EndCapture when done with it, on the shard's goroutine, as
// Capture and CaptureProgress are called.
func (s *Shard) Capture() *Capture {
	ks := &s.keys
	w := &ks.records.cow
	w.epoch++
	c := &Capture{
		view: keyspace{
			records: recordStore{
				chunks: slices.Clone(ks.records.chunks),
				extras: slices.Clone(ks.records.extras),
				n:      ks.records.n,
			},
			params:  paramTable{sets: ks.params.sets},
			freeTop: ks.freeTop,
			freeLen: ks.freeLen,
			sweep:   ks.sweep,
		},
		now:      s.now,
		evict:    s.evictCursor,
		settings: s.appendSettings(nil),
	}
	c.view.frozenGlobals = make(map[int32][]byte, len(ks.globals))
	for i := range ks.globals {
		c.view.frozenGlobals[i] = appendGlobal(nil, ks, i)
	}
	w.live = append(w.live, liveCapture{c: c, epoch: w.epoch})
	ks.params.hold = true
	return c
}

// CaptureProgress tells the shard that c has encoded its first parts
// (Encoded): it need not keep their chunks any longer.
func (s *Shard) CaptureProgress(c *Capture, parts int) {
	w := &s.keys.records.cow
	for k := range w.live {
		if w.live[k].c == c {
			w.progress(&w.live[k], int32(min(parts, len(c.view.records.chunks))))
		}
	}
}

// EndCapture ends c, which is no longer being encoded: the shard stops
// keeping anything for it. A capture of a keyspace since flushed is
// forgotten already.
func (s *Shard) EndCapture(c *Capture) {
	ks := &s.keys
	w := &ks.records.cow
	for k := range w.live {
		if w.live[k].c == c {
			w.progress(&w.live[k], int32(len(c.view.records.chunks)))
		}
	}
	w.live = slices.DeleteFunc(w.live, func(l liveCapture) bool { return l.c == c })
	if !w.active() {
		ks.params.releaseHeld()
		keep := min(len(w.spare), len(ks.records.chunks)/maxSpareShare)
		clear(w.spare[keep:])
		w.spare = w.spare[:keep]
	}
}

// maxSpareShare bounds the spare chunks kept between captures to this
// share of the chunks in use: 14 bytes a key at most, which a capture
// spends anyway.
const maxSpareShare = 4

// CaptureCopies counts the chunks copied for captures (Stats's), cheaply.
func (s *Shard) CaptureCopies() int64 { return s.keys.records.cow.copies }

// Size is the length of the capture's payload.
func (c *Capture) Size() int {
	c.prepare()
	return c.size
}

// Parts is how many parts AppendNext appends: one a chunk of records, at
// least one.
func (c *Capture) Parts() int { return max(1, len(c.view.records.chunks)) }

// Encoded is how many parts AppendNext has appended.
func (c *Capture) Encoded() int { return c.encoded }

// AppendNext appends the payload's next part to b: the first begins with
// the clock and the number of records, each holds a chunk's records, and
// the last ends with the sections. It does nothing once all are appended.
func (c *Capture) AppendNext(b []byte) []byte {
	if c.encoded == c.Parts() {
		return b
	}
	c.prepare()
	ks, k := &c.view, c.encoded
	if k == 0 {
		b = wire.AppendVarint(b, c.now)
		b = wire.AppendUvarint(b, uint64(ks.records.len()))
	}
	if k < len(ks.records.chunks) {
		for i := int32(k) << chunkShift; i < min(int32(k+1)<<chunkShift, ks.records.n); i++ {
			if ks.records.at(i).params == 0 {
				b = append(b, 0)
				continue
			}
			b = appendEntry(b, ks, i, c.now)
		}
		// Encoded: the originals of chunks the shard copied meanwhile
		// are garbage now.
		ks.records.chunks[k], ks.records.extras[k] = nil, nil
	}
	c.encoded++
	if c.encoded == c.Parts() {
		b = append(b, c.tail...)
	}
	return b
}

// prepare sizes the payload and encodes its sections, the layout's free
// stack walked through the records before any chunk is dropped.
func (c *Capture) prepare() {
	if c.tail != nil {
		return
	}
	ks := &c.view
	c.tail = append(layoutSection(nil, ks.freeList(), ks.sweep, c.evict), c.settings...)
	n := wire.VarintLen(c.now) + wire.UvarintLen(uint64(ks.records.len())) + len(c.tail)
	var scratch []byte
	for i := range int32(ks.records.len()) {
		n += entryLen(ks, i, c.now, &scratch)
	}
	c.size = n
}

// AppendSnapshot appends the shard's state to b: its clock, then every
// record in order (a free one as a 0 byte, a key, even one expired but not
// yet reclaimed, as its entry), then the sections of sections.go. A restored
// shard is the same record for record, free list and cursors included, so
// that what depends on the layout (which keys an eviction examines) stays
// the same on every replica. RestoreShard reads it back.
//
// b is first grown to the exact size of the snapshot, so that encoding a
// large shard allocates its bytes once (docs/performance.md#memory,
// "Snapshots sized exactly"). It is a capture encoded at once; a caller
// that must not hold the shard meanwhile encodes a Capture elsewhere.
func (s *Shard) AppendSnapshot(b []byte) []byte {
	c := s.Capture()
	defer s.EndCapture(c)
	b = slices.Grow(b, c.Size())
	for c.Encoded() < c.Parts() {
		b = c.AppendNext(b)
	}
	return b
}
