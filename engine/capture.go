package engine

import (
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// A Capture is a shard's state frozen at one instant, which another
// goroutine encodes as a snapshot (AppendSnapshot's bytes) while the shard
// goes on applying commands. Taking one costs the shard nothing that grows
// with its keys (CaptureInSteps): the capture takes the shard's chunk
// pointers (two words for 256 keys, 2 MiB at 30 million keys) a step at a
// time between the shard's batches (FillCapture), and before the shard
// writes a chunk the capture has not yet taken, it keeps the original for
// it (Capture.early).
//
// The capture keeps the chunks of records (recordStore) and their extras
// as they were; from then on the shard writes no chunk the capture still
// needs: before its first write to one, it copies the chunk (ChunkBytes) and
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
	view keyspace // the records, extras and parameter sets as captured
	// src are the shard's chunk pointers and extras when it was taken,
	// which FillCapture copies into view, filled of them so far; early
	// are the originals of chunks the shard copied before their turn
	// (recordStore.own), which FillCapture takes instead. Only the shard's
	// goroutine (or its lock's holder) reads src and early: after a
	// flush, nothing writes src's arrays any more.
	src       []*recordChunk
	srcExtras []*chunkExtras
	early     map[int32]frozenChunk
	filled    int
	settings  []byte // the sections after the layout
	now       int64
	evict     int
	tail      []byte // the layout and settings sections, once prepared
	size      int    // the payload's length, once prepared
	encoded   int    // parts appended
	copyBound int64  // CopyBound's
}

// frozenChunk is a chunk as a capture took it: its records and extras.
type frozenChunk struct {
	chunk  *recordChunk
	extras *chunkExtras
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

// owned notes that chunk c was just copied from orig, whose extras were
// origExtras: a capture that needs it and has not yet taken it
// (FillCapture) keeps it.
func (w *copyOnWrite) owned(c int32, orig *recordChunk, origExtras *chunkExtras) {
	for _, l := range w.live {
		if w.gens[c] < l.epoch && int(c) >= l.c.filled {
			l.c.early[c] = frozenChunk{orig, origExtras}
		}
	}
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
// goes on, taking its chunk pointers at once. Call EndCapture when done
// with it, on the shard's goroutine, as Capture and CaptureProgress are
// called.
func (s *Shard) Capture() *Capture {
	c := s.CaptureInSteps()
	s.FillCapture(c, len(c.src))
	return c
}

// CaptureInSteps freezes the shard's state as Capture does, but takes none
// of its chunk pointers yet: FillCapture takes them, as many a call as the
// caller likes, called as Capture is (on the shard's goroutine, between
// its commands); the capture is encoded once they are all taken. So a
// capture of millions of keys never holds the shard for a copy of
// megabytes of pointers.
func (s *Shard) CaptureInSteps() *Capture {
	ks := &s.keys
	w := &ks.records.cow
	w.epoch++
	c := &Capture{
		src:       ks.records.chunks,
		srcExtras: ks.records.extras,
		early:     make(map[int32]frozenChunk),
		view: keyspace{
			records: recordStore{
				n: ks.records.n,
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
	c.copyBound = int64(max(len(c.src)-len(w.spare), 0)) * ChunkBytes
	w.live = append(w.live, liveCapture{c: c, epoch: w.epoch})
	ks.params.hold = true
	return c
}

// CopyBound is the most the shard may allocate for chunk copies while c is
// in progress: a copy of every chunk it holds, less the spare chunks the
// copies are made into first. The copies stay live until the capture ends
// (they are the shard's state, the originals the capture's), so a
// collection during a capture frees none of them: a caller that paces the
// collector can let the heap grow by this much before collecting
// (gcpacer's Reserved). The records' slices copied with them (logs,
// hashes, lists) are not counted: few keys hold any.
func (c *Capture) CopyBound() int64 { return c.copyBound }

// Reserve allocates the capture's view of the chunk pointers, which
// FillCapture fills. It touches only the capture: call it on the goroutine
// that encodes it, outside the shard's lock, so that the shard never waits
// for megabytes to be zeroed. FillCapture calls it otherwise.
func (c *Capture) Reserve() {
	if c.view.records.chunks == nil && len(c.src) > 0 {
		c.view.records.chunks = make([]*recordChunk, len(c.src))
		c.view.records.extras = make([]*chunkExtras, len(c.src))
	}
}

// FillCapture takes up to n more of c's chunk pointers (two copies of 8n
// bytes) and reports whether it has them all. The original of a chunk the
// shard copied since c was taken is taken instead of the chunk. It reads
// only what the shard had when c was taken, so a capture of a keyspace
// since flushed fills as well.
func (s *Shard) FillCapture(c *Capture, n int) bool {
	c.Reserve()
	v := &c.view.records
	from, end := c.filled, min(c.filled+max(n, 0), len(c.src))
	copy(v.chunks[from:end], c.src[from:end])
	if from < len(c.srcExtras) {
		copy(v.extras[from:end], c.srcExtras[from:min(end, len(c.srcExtras))])
	}
	// The originals kept are all at or past from, and few: the chunks the
	// shard wrote first since c was taken, while it was being filled.
	for k, o := range c.early {
		if int(k) < end {
			v.chunks[k], v.extras[k] = o.chunk, o.extras
			delete(c.early, k)
		}
	}
	c.filled = end
	return end == len(c.src)
}

// CaptureProgress tells the shard that c has encoded its first parts
// (Encoded): it need not keep their chunks any longer.
func (s *Shard) CaptureProgress(c *Capture, parts int) {
	w := &s.keys.records.cow
	for k := range w.live {
		if w.live[k].c == c {
			w.progress(&w.live[k], int32(min(parts, len(c.src))))
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
			w.progress(&w.live[k], int32(len(c.src)))
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
func (c *Capture) Parts() int { return max(1, len(c.src)) }

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
	if c.filled < len(c.src) {
		panic("engine: a capture encoded before FillCapture took all its chunks")
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
