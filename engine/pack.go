package engine

import (
	"errors"
	"math"

	"github.com/rlserver/rlserver/internal/wire"
)

// Commands that take several strings (HSET's fields and values, LPUSH's
// elements, a script's keys and arguments) carry them packed in
// Command.Value: each one's length as a uvarint, then its bytes. A packed
// value crosses the log and the bus as any value does, bounded by
// MaxValue.

// AppendPacked appends s to b, packed.
func AppendPacked(b []byte, s []byte) []byte { return wire.AppendBytes(b, s) }

// Pack packs every string of ss into one value.
func Pack(ss [][]byte) []byte {
	n := 0
	for _, s := range ss {
		n += wire.UvarintLen(uint64(len(s))) + len(s)
	}
	b := make([]byte, 0, n)
	for _, s := range ss {
		b = AppendPacked(b, s)
	}
	return b
}

// eachPacked calls fn with each string packed in v, in order, and returns
// false if v is not a packing (a command read from a log is checked with
// it before it reaches a shard). The strings alias v.
func eachPacked(v []byte, fn func(s []byte)) bool {
	for len(v) > 0 {
		s, rest, ok := nextPacked(v)
		if !ok {
			return false
		}
		if fn != nil {
			fn(s)
		}
		v = rest
	}
	return true
}

// nextPacked splits the first string packed in v from the rest; ok is false
// if v does not start with one.
func nextPacked(v []byte) (s, rest []byte, ok bool) {
	r := wire.NewReader(v, errNotPacked)
	s = r.Bytes(math.MaxUint64)
	if r.Err() != nil {
		return nil, v, false
	}
	return s, r.Rest(), true
}

// errNotPacked is what reading a value that is not a packing fails with;
// nextPacked says no more than that.
var errNotPacked = errors.New("not a packing")

// packedCount is the number of strings packed in v, -1 if v is not a
// packing.
func packedCount(v []byte) int {
	n := 0
	for len(v) > 0 {
		var ok bool
		if _, v, ok = nextPacked(v); !ok {
			return -1
		}
		n++
	}
	return n
}

// unpack returns the strings packed in v (which must be a packing),
// appended to dst.
func unpack(dst [][]byte, v []byte) [][]byte {
	eachPacked(v, func(s []byte) { dst = append(dst, s) })
	return dst
}

// packedCheck checks that Value packs at least least strings, and a
// multiple of step of them (step 0: exactly least).
func packedCheck(least, step int) func(c Command) error {
	return func(c Command) error {
		n := packedCount(c.Value)
		if n < least || (step == 0 && n != least) || (step > 0 && n%step != 0) {
			return paramError("%d packed values", n)
		}
		return nil
	}
}
