package engine

// paramTable interns the (kind, parameters) of records: most keys of a
// shard share a few limits, so a record holds a 4-byte number instead of
// four words. Sets are counted and freed when no record uses them, so
// parameters that come and go (a misconfigured client sending random
// limits) cost only while keys use them. Numbers are given in order of first
// use, reusing the latest freed first, so they are deterministic too; set 0
// is no set, the mark of a free record.
//
// While a capture is in progress (capture.go) its records may name sets
// the live records no longer use: a set freed then is held, its number
// not reused and its entry not cleared, until the captures end. Numbers
// are not replicated state (a snapshot holds the parameters themselves,
// and a restored shard numbers them afresh), so holding them changes
// nothing another replica could see.
type paramTable struct {
	sets []paramSet
	refs []uint32
	ids  map[paramSet]uint32
	free []uint32
	hold bool     // a capture is in progress
	held []uint32 // sets freed while one was
}

type paramSet struct {
	kind Kind
	p    [3]int64
}

func newParamTable() paramTable {
	return paramTable{sets: []paramSet{{}}, refs: []uint32{0}, ids: make(map[paramSet]uint32)}
}

// acquire returns the number of (kind, p), counting one more user.
func (t *paramTable) acquire(kind Kind, p [3]int64) uint32 {
	set := paramSet{kind: kind, p: p}
	if id, ok := t.ids[set]; ok {
		t.refs[id]++
		return id
	}
	var id uint32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
		t.sets[id], t.refs[id] = set, 1
	} else {
		id = uint32(len(t.sets))
		t.sets = append(t.sets, set)
		t.refs = append(t.refs, 1)
	}
	t.ids[set] = id
	return id
}

// release counts one user of set id fewer, freeing it with the last.
func (t *paramTable) release(id uint32) {
	if id == 0 {
		return
	}
	if t.refs[id]--; t.refs[id] == 0 {
		delete(t.ids, t.sets[id])
		if t.hold {
			t.held = append(t.held, id)
			return
		}
		t.sets[id] = paramSet{}
		t.free = append(t.free, id)
	}
}

// releaseHeld frees the sets held for captures, which have all ended.
func (t *paramTable) releaseHeld() {
	for _, id := range t.held {
		t.sets[id] = paramSet{}
		t.free = append(t.free, id)
	}
	t.hold, t.held = false, nil
}

// bytes estimates the table's memory.
func (t *paramTable) bytes() int64 {
	return int64(cap(t.sets))*36 + int64(len(t.ids))*64
}
