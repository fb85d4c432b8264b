package engine

import "hash/maphash"

// keyIndex maps keys to record numbers by open addressing with linear
// probing. Each slot is a control byte (empty, deleted, or 0x80 and seven
// bits of the key's hash) and a record number, kept in two arrays: a probe
// reads control bytes, and looks at a record only when its seven bits match.
// The keyspace probes it (it alone knows the keys).
type keyIndex struct {
	seed    maphash.Seed
	ctrl    []uint8
	slots   []int32
	used    int // full slots
	deleted int // deleted slots, dropped by the next rebuild
}

const (
	ctrlEmpty   = 0
	ctrlDeleted = 1
	// indexSlotSize is what one slot costs.
	indexSlotSize = 5
	minIndexSize  = 16
)

func newKeyIndex(size int) keyIndex {
	return keyIndex{seed: maphash.MakeSeed(), ctrl: make([]uint8, size), slots: make([]int32, size)}
}

func fingerprint7(h uint64) uint8 { return 0x80 | uint8(h>>57) }

// crowded reports whether one more key would fill the table past 7/8.
func (x *keyIndex) crowded() bool {
	return (x.used+x.deleted+1)*8 > len(x.ctrl)*7
}

// place puts record r, hashed to h, in the first free slot of its probe
// sequence.
func (x *keyIndex) place(h uint64, r int32) {
	mask := uint64(len(x.ctrl) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if c := x.ctrl[i]; c == ctrlEmpty || c == ctrlDeleted {
			if c == ctrlDeleted {
				x.deleted--
			}
			x.ctrl[i], x.slots[i] = fingerprint7(h), r
			x.used++
			return
		}
	}
}

// drop deletes record r, hashed to h.
func (x *keyIndex) drop(h uint64, r int32) {
	mask := uint64(len(x.ctrl) - 1)
	fp := fingerprint7(h)
	for i := h & mask; x.ctrl[i] != ctrlEmpty; i = (i + 1) & mask {
		if x.ctrl[i] == fp && x.slots[i] == r {
			x.ctrl[i] = ctrlDeleted
			x.used--
			x.deleted++
			return
		}
	}
}

// records lists the record numbers the index holds.
func (x *keyIndex) records() []int32 {
	out := make([]int32, 0, x.used)
	for i, c := range x.ctrl {
		if c >= 0x80 {
			out = append(out, x.slots[i])
		}
	}
	return out
}

// bytes is the index's memory.
func (x *keyIndex) bytes() int64 { return int64(len(x.ctrl)) * indexSlotSize }
