package wire

import (
	"encoding/binary"
	"fmt"
)

// Reader reads what the Append functions wrote, from a byte slice it
// consumes. The first thing that does not decode is its error (Err), which
// wraps the sentinel its caller chose (a corrupt snapshot, a malformed Raft
// entry), so that callers compare errors with errors.Is. Reads go on after
// an error and give zeros or nil: a decoder reads a whole structure, then
// checks Err once before it trusts what it read.
//
// A Reader never copies: the byte strings it returns alias its input.
//
// The engine's snapshots and the cluster's Raft entries and bus messages
// (cluster/codec.go's reader wraps it) are read with it. FailWith records
// an error of the caller's own, such as an entry only a newer release can
// read.
type Reader struct {
	b   []byte
	err error
	bad error // the sentinel the errors wrap
}

// NewReader returns a Reader of b whose errors wrap bad.
func NewReader(b []byte, bad error) Reader { return Reader{b: b, bad: bad} }

// Err is the first error the reader met, nil if none.
func (r *Reader) Err() error { return r.err }

// Fail records, unless the reader has an error already, that the input is
// bad: an error wrapping the sentinel, saying what.
func (r *Reader) Fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", r.bad, what)
	}
}

// FailWith records err, unless the reader has an error already: for what
// the caller finds wrong in values it read, with its own sentinel.
func (r *Reader) FailWith(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Len is the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.b) }

// Rest is the bytes not read yet, which it leaves unread.
func (r *Reader) Rest() []byte { return r.b }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		r.Fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Bool reads what AppendBool wrote: 1 or 0; any other byte fails.
func (r *Reader) Bool() bool {
	c := r.Byte()
	if c > 1 {
		r.Fail("bad boolean")
		return false
	}
	return c == 1
}

// Uvarint reads a uvarint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a zig-zag varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Bytes reads a byte string after its length, at most max bytes long, or
// fails ("bad length"); after an error, it reads nothing and returns nil.
// The result aliases the input, with no room to append into it.
func (r *Reader) Bytes(max uint64) []byte {
	n := r.Uvarint()
	if r.err != nil || n > max || n > uint64(len(r.b)) {
		r.Fail("bad length")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Next reads the next n bytes, whatever they hold, or fails ("truncated")
// and returns nil when fewer remain. The result aliases the input, with no
// room to append into it.
func (r *Reader) Next(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.Fail("truncated")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}
