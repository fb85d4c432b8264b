package engine

// Kind is the algorithm that owns a key. A key keeps its kind until it
// expires or is deleted; using it with another algorithm is a WRONGTYPE error.
type Kind uint8

// The kinds, one per algorithm, and Redis's string. Their values are written
// into snapshots: add new kinds at the end, never reorder.
const (
	kindNone Kind = iota // a free record
	KindSliding
	KindFixed
	KindLog
	KindToken
	KindLeaky
	KindGCRA
	KindThrottle
	KindShape  // RL.SHAPE
	KindQuota  // RL.QUOTA
	KindLease  // RL.ACQUIRE
	KindString // INCR, SET ...: a Redis string
	KindHash   // HSET ...: a Redis hash
	KindList   // LPUSH ...: a Redis list
	KindShare  // RL.SHARE: budget leases
	KindGlobal // a limit shared by the regions of a federation (GLOBAL)
	kindCount
)

// keyKind is what the keyspace needs of a kind of key: when it expires, how
// RL.INFO describes it and which stored states are valid. Every algorithm is
// one (see algorithm), and so is the string.
type keyKind interface {
	// expiresAt is the first instant (ms) at which record i is back to
	// "never seen": from then on the key no longer exists.
	expiresAt(ks *keyspace, i int32) int64
	// describe appends RL.INFO's fields for record i as of now, after the
	// algorithm's name (see budgetFields for those that end every limiter's).
	describe(ks *keyspace, i int32, now int64, f []Field) []Field
	// valid reports whether params, state and log, read from a snapshot,
	// are ones this kind can hold.
	valid(params, state [3]int64, log []logEntry) bool
}

// kindSpec is a kind's name and behaviour.
type kindSpec struct {
	name string // what TYPE reports: the command that owns the key, in lower case
	keyKind
	// log is the kind as a logKeeper, nil when its records keep no log:
	// asked once here rather than by a type assertion on every write.
	log logKeeper
	// extra is the extra field of its algorithm's replies (OpSpec.extra),
	// found here from a verdict's kind.
	extra string
}

// kinds is every kind, by value. The algorithms' rows come from the ops
// that decide with them (ops.go), so a kind is described once.
var kinds = func() (t [kindCount]kindSpec) {
	t[kindNone].name = "none"
	t[KindString] = kindSpec{name: "string", keyKind: stringKind{}}
	t[KindHash] = kindSpec{name: "hash", keyKind: collectionKind{}}
	t[KindList] = kindSpec{name: "list", keyKind: collectionKind{}}
	t[KindShare] = kindSpec{name: "rl.share", keyKind: shareKind{}}
	t[KindGlobal] = kindSpec{name: "rl.global", keyKind: globalKind{}}
	for op := range ops {
		if spec := &ops[op]; spec.algo != nil {
			name := spec.typeName
			if name == "" {
				name = spec.Name
			}
			log, _ := spec.algo.(logKeeper)
			t[spec.kind] = kindSpec{name, spec.algo, log, spec.extra}
		}
	}
	return t
}()

// String is the name TYPE reports: the command that owns the key, in lower
// case ("none" for no key).
func (k Kind) String() string {
	if k >= kindCount {
		return "unknown"
	}
	return kinds[k].name
}

// KindByName returns the kind whose String is name, for SCAN's TYPE filter.
func KindByName(name string) (Kind, bool) {
	for k := KindSliding; k < kindCount; k++ {
		if kinds[k].name == name {
			return k, true
		}
	}
	return kindNone, false
}
