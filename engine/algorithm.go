package engine

// An algorithm is a limiter: one file holds it (sliding.go, bucket.go, ...),
// and one row of ops names it with the op that asks for it. The engine
// reaches it only through that row, so adding an algorithm is its file and
// its row.
type algorithm interface {
	keyKind
	// evaluate computes into v the verdict of spending cost units (a
	// negative cost is a refund, 0 a peek) under the command's parameters p
	// on record i (-1: the key is absent) at now. It changes nothing: v says
	// what to write (see decide.go).
	evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict)
}

// budgetFields appends the fields that end every limiter's RL.INFO: what a
// peek would report of its budget, and when the key expires.
func budgetFields(f []Field, d Decision, ttl int64) []Field {
	return append(f, Field{Name: "remaining", Int: d.Remaining},
		Field{Name: "reset_after_ms", Int: d.ResetAfter}, Field{Name: "ttl_ms", Int: ttl})
}

// validTime reports whether v is an instant a shard's clock may reach.
func validTime(v int64) bool { return v >= 0 && v <= MaxTime }

// validCount reports whether v is a count an algorithm may store.
func validCount(v int64) bool { return v >= 0 && v <= MaxCount }
