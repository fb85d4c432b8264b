package engine

// Hashes (hash.go) and lists (list.go) are Redis's types, for the limiters
// written against Redis that keep their state in them (Laravel's, the
// seed's script, Python limits' moving window). Their records hold only
// the expiry, in state[1] as a string's (0: none); their contents live in
// their chunk's extras (extras.go). Both are bounded, so that no command
// can make one key cost more than a few megabytes, and charged to the
// memory limit by their contents' lengths, literal sizes like every other
// record's.

// Bounds on hashes and lists.
const (
	// maxHashFields bounds the fields of one hash: a limiter keeps a few,
	// and a hash is searched field by field.
	maxHashFields = 1024
	// maxListLen bounds the elements of one list: a moving window keeps
	// one per request in the window.
	maxListLen = 100_000
	// collEntrySize is what a field, a value or an element is charged
	// beyond its bytes.
	collEntrySize = 16
)

var (
	errHashFull = &Error{CodeParam, "a hash holds at most 1024 fields"}
	errListFull = &Error{CodeParam, "a list holds at most 100000 elements"}
)

// collBytes is what the hashes and lists are charged.
func (ks *keyspace) collBytes() int64 {
	return ks.collLen + collEntrySize*ks.collN + 48*int64(ks.nHashes+ks.nLists)
}

// collUsage is what record i's hash or list is charged, 0 for other kinds.
func (ks *keyspace) collUsage(i int32) int64 {
	e := ks.extras(i)
	if e == nil {
		return 0
	}
	var n int64
	if h, ok := e.hashes[i]; ok {
		n = 48
		for _, f := range h {
			n += int64(len(f.name)+len(f.value)) + 2*collEntrySize
		}
	}
	if l, ok := e.lists[i]; ok {
		n = 48
		for _, e := range l {
			n += int64(len(e)) + collEntrySize
		}
	}
	return n
}

// dropCollection forgets record i's hash or list.
func (ks *keyspace) dropCollection(i int32) {
	e := ks.extras(i)
	if e == nil {
		return
	}
	if h, ok := e.hashes[i]; ok {
		for _, f := range h {
			ks.collLen -= int64(len(f.name) + len(f.value))
		}
		ks.collN -= 2 * int64(len(h))
		ks.nHashes--
		delete(ks.records.extMut(i).hashes, i)
	}
	if l, ok := e.lists[i]; ok {
		for _, v := range l {
			ks.collLen -= int64(len(v))
		}
		ks.collN -= int64(len(l))
		ks.nLists--
		delete(ks.records.extMut(i).lists, i)
	}
}

// collectionKind is a hash's or a list's record: an expiry and nothing
// else.
type collectionKind struct{}

func (collectionKind) expiresAt(ks *keyspace, i int32) int64 {
	return stringExpiresAt(ks.records.at(i).state)
}

func (collectionKind) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	return stringKind{}.describe(ks, i, now, f)
}

// valid checks a hash's or list's record: no parameters, an expiry in
// range, nothing else.
func (collectionKind) valid(params, st [3]int64, _ []logEntry) bool {
	return params == [3]int64{} && st[0] == 0 && st[2] == 0 && st[1] >= 0 && st[1] <= MaxExpiry
}

// collection looks key up for a command on a hash or list of kind: its
// record, -1 when absent, or WRONGTYPE when the key is of another kind.
func (s *Shard) collection(now int64, key []byte, kind Kind) (int32, error) {
	i := s.lookup(key, now)
	if i >= 0 && s.keys.kind(i) != kind {
		return -1, ErrWrongType
	}
	return i, nil
}

// createCollection makes an empty hash or list for key, within the memory
// limit.
func (s *Shard) createCollection(now int64, key []byte, kind Kind) (int32, error) {
	if err := s.admit(now, 1, nil); err != nil {
		return -1, err
	}
	i := s.keys.add(key, kind, [3]int64{})
	s.keys.persistent++
	return i, nil
}
