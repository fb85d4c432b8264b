package engine

// Kind is the algorithm that owns a key. A key keeps its kind until it
// expires or is deleted; using it with another algorithm is a WRONGTYPE error.
type Kind uint8

// The kinds, one per decision command, and Redis's string. Their values are
// written into snapshots: add new kinds at the end, never reorder.
const (
	kindNone Kind = iota // a free slot
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
	kindCount
)

var kindNames = [kindCount]string{
	kindNone:     "none",
	KindSliding:  "rl.sliding",
	KindFixed:    "rl.fixed",
	KindLog:      "rl.log",
	KindToken:    "rl.token",
	KindLeaky:    "rl.leaky",
	KindGCRA:     "rl.gcra",
	KindThrottle: "cl.throttle",
	KindShape:    "rl.shape",
	KindQuota:    "rl.quota",
	KindLease:    "rl.lease",
	KindString:   "string",
}

// String is the name TYPE reports: the command that owns the key, in lower
// case ("none" for no key).
func (k Kind) String() string {
	if k >= kindCount {
		return "unknown"
	}
	return kindNames[k]
}

// KindByName returns the kind whose String is name, for SCAN's TYPE filter.
func KindByName(name string) (Kind, bool) {
	for k := KindSliding; k < kindCount; k++ {
		if kindNames[k] == name {
			return k, true
		}
	}
	return kindNone, false
}
