package engine

import "slices"

// Leases is RL.ACQUIRE's concurrency limit: at most Limit leases held on a
// key at once, each until it is released or its TTL passes, so the leases of
// a client that crashed expire by themselves. A lease is a logEntry: At is
// when it expires, N its id. Ids are the same on every replica, and never
// repeat on a key, even once it has expired and come back: see leaseID.
type Leases struct {
	Limit int64 // leases held at once, 1..MaxLogLimit
	TTL   int64 // ms a lease lasts unless released, 1..MaxDuration
}

// liveLeases returns the leases of entries (sorted by expiry) still held at now.
func liveLeases(entries []logEntry, now int64) []logEntry {
	i := 0
	for i < len(entries) && entries[i].At <= now {
		i++
	}
	return entries[i:]
}

// Acquire grants a new lease, numbered next, or refuses it: the leases to
// keep, and the decision. It changes nothing given.
func (l Leases) Acquire(entries []logEntry, next, now int64) ([]logEntry, Decision) {
	entries = liveLeases(entries, now)
	held := int64(len(entries))
	if held >= l.Limit {
		d := denied(l.Limit, 0, max(entries[0].At-now, 1))
		d.ResetAfter = entries[len(entries)-1].At - now
		return entries, d
	}
	lease := logEntry{At: now + l.TTL, N: next}
	at, _ := slices.BinarySearchFunc(entries, lease.At, func(e logEntry, t int64) int {
		if e.At <= t {
			return -1
		}
		return 1
	})
	out := make([]logEntry, 0, len(entries)+1)
	out = append(append(append(out, entries[:at]...), lease), entries[at:]...)
	d := granted(l.Limit, l.Limit-held, 1)
	d.ResetAfter = out[len(out)-1].At - now
	return out, d
}

// leaseIDShift makes lease ids time-based: an id is at least the time of
// its grant shifted left by this much, and one more than the key's previous
// id. A key only comes back after its last lease expired, later than every
// grant it made, so its new ids exceed the old ones unless it granted more
// than 2^20 leases in one millisecond.
const leaseIDShift = 20

// leaseID is the id of a lease granted at now after the id last.
func leaseID(last, now int64) int64 { return max(last+1, now<<leaseIDShift) }

// leasesExpireAt is when a lease key is gone: when its last lease expires,
// but not before the millisecond after its last id's, so that a key whose
// leases were all released at once does not come back within the same
// millisecond and hand out that id again.
func leasesExpireAt(leases []logEntry, last int64) int64 {
	at := last>>leaseIDShift + 1
	if n := len(leases); n > 0 {
		at = max(at, leases[n-1].At)
	}
	return at
}

// evaluateLease evaluates RL.ACQUIRE. The key's state holds the last id.
func (s *Shard) evaluateLease(now int64, c *Command, i int32, v *verdict) {
	l := Leases{Limit: c.Args[0], TTL: c.Args[1]}
	var entries []logEntry
	var last int64
	if i >= 0 {
		entries, last = s.keys.log(i), s.keys.records[i].state[0]
	}
	next := leaseID(last, now)
	v.params = [3]int64{l.Limit, l.TTL}
	if c.Args[3] == 0 { // a peek
		entries = liveLeases(entries, now)
		v.d = Decision{Allowed: int64(len(entries)) < l.Limit, Limit: l.Limit, Remaining: max(l.Limit-int64(len(entries)), 0)}
		if len(entries) > 0 {
			v.d.ResetAfter = entries[len(entries)-1].At - now
			if !v.d.Allowed {
				v.d.RetryAfter = max(entries[0].At-now, 1)
			}
		}
		return
	}
	v.log, v.d = l.Acquire(entries, next, now)
	if v.d.Allowed {
		v.write, v.extra, v.state = true, next, [3]int64{next}
	}
}

// release ends lease id of the key, as RL.RELEASE: 1 if it was held.
func (s *Shard) release(now int64, c *Command, r *Result) {
	r.Type = ResInt
	i := s.lookup(c.Key, now)
	if i < 0 {
		return
	}
	if s.keys.kind(i) != KindLease {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	entries := liveLeases(s.keys.log(i), now)
	for j, e := range entries {
		if e.N == c.Args[0] {
			s.keys.setLog(i, slices.Delete(slices.Clone(entries), j, j+1))
			r.Int = 1
			return
		}
	}
}
