package engine

// A record stores three parameters and three state words; what they mean
// depends on its kind, and each algorithm's file reads them under its own
// names (sliding.go's keyspace.sliding, ...).

// expiresAt is the first instant (ms) at which record i's state is back to
// "never seen"; from then on the key no longer exists.
func (ks *keyspace) expiresAt(i int32) int64 {
	if k := ks.kind(i); k != kindNone {
		return kinds[k].expiresAt(ks, i)
	}
	return 0
}

// logKeeper is an algorithm whose records keep a log of entries (RL.LOG's
// grants, RL.ACQUIRE's leases) beside their state.
type logKeeper interface {
	// liveLog is the part of record i's log still in force at now: what a
	// snapshot keeps.
	liveLog(ks *keyspace, i int32, now int64) []logEntry
}
