// Package wire is the byte encoding of what rlserver writes for itself: the
// engine's snapshots, and the cluster's Raft entries and messages between
// nodes. Integers are encoding/binary's varints (unsigned, or zig-zag for
// signed ones), a flag is one byte, and a byte string follows its length
// as a uvarint. The Append functions write it; a Reader reads it back,
// remembering the first error; UvarintLen and VarintLen size it before it
// is written.
//
// The bytes are persisted (snapshots and Raft logs outlive the process
// that wrote them), so what a function writes never changes.
package wire

import (
	"encoding/binary"
	"math/bits"
)

// AppendUvarint appends v as a uvarint.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendVarint appends v as a zig-zag varint.
func AppendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// AppendVarints appends each of vs as a varint.
func AppendVarints(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// AppendBool appends v as one byte, 1 or 0.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendBytes appends s after its length.
func AppendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendString appends s after its length, as AppendBytes does.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// UvarintLen is the length AppendUvarint gives v.
func UvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// VarintLen is the length AppendVarint gives v.
func VarintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return UvarintLen(u)
}
