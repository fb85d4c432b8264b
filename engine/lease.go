package engine

import (
	"math"
	"slices"
)

// leases is RL.ACQUIRE's concurrency limit: at most Limit leases held on a
// key at once, each until it is released or its TTL passes, so the leases of
// a client that crashed expire by themselves. A lease is a logEntry: At is
// when it expires, N its id. Ids are the same on every replica, and never
// repeat on a key, even once it has expired and come back: see leaseID.
type leases struct {
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

// acquire grants a new lease, numbered next, or refuses it: the leases to
// keep, and the decision. It changes nothing given.
func (l leases) acquire(entries []logEntry, next, now int64) ([]logEntry, Decision) {
	entries = liveLeases(entries, now)
	held := int64(len(entries))
	if held >= l.Limit {
		d := denied(l.Limit, l.Limit-held, max(entries[0].At-now, 1))
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

// leaseAlgorithm is RL.ACQUIRE: a record holds the limit and the lease's
// TTL, the last id granted, and its log the leases held.
type leaseAlgorithm struct{}

// leaseParams are RL.ACQUIRE's parameters.
var leaseParams = []Param{{Name: "limit", Min: 1, Max: MaxLogLimit}, {Name: "lease_ms", Min: 1, Max: MaxDuration}}

// evaluate takes a lease (cost 1) or peeks (cost 0). The key's state holds
// the last id.
func (leaseAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	l := leases{Limit: p[0], TTL: p[1]}
	var entries []logEntry
	var last int64
	if i >= 0 {
		entries, last = ks.log(i), ks.records.at(i).state[0]
	}
	next := leaseID(last, now)
	v.params = [3]int64{l.Limit, l.TTL}
	if cost == 0 {
		entries = liveLeases(entries, now)
		v.d = Decision{Allowed: int64(len(entries)) < l.Limit, Limit: l.Limit, Remaining: l.Limit - int64(len(entries))}
		if len(entries) > 0 {
			v.d.ResetAfter = entries[len(entries)-1].At - now
			if !v.d.Allowed {
				v.d.RetryAfter = max(entries[0].At-now, 1)
			}
		}
		return
	}
	v.log, v.d = l.acquire(entries, next, now)
	if v.d.Allowed {
		v.write, v.extra, v.state = true, next, [3]int64{next}
	}
}

func (leaseAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	return leasesExpireAt(ks.log(i), ks.records.at(i).state[0])
}

func (leaseAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	p, held := ks.paramsOf(i), liveLeases(ks.log(i), now)
	d := Decision{Limit: p[0], Remaining: p[0] - int64(len(held))}
	if n := len(held); n > 0 {
		d.ResetAfter = held[n-1].At - now
	}
	f = append(f, Field{Name: "limit", Int: p[0]}, Field{Name: "lease_ms", Int: p[1]},
		Field{Name: "held", Int: int64(len(held))})
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

// valid checks the leases: sorted by expiry, ids up to the last granted, no
// more than the limit.
func (leaseAlgorithm) valid(params, st [3]int64, log []logEntry) bool {
	prev := int64(math.MinInt64)
	for _, le := range log {
		if le.At < prev || le.At < 0 || le.At > MaxTime+MaxDuration || le.N < 1 || le.N > st[0] {
			return false
		}
		prev = le.At
	}
	return validArgs(OpAcquire, params) && params[2] == 0 && len(log) <= int(params[0]) &&
		st[0] >= 0 && st[1] == 0 && st[2] == 0
}

// liveLog is the part of record i's leases a snapshot keeps: those held at
// now.
func (leaseAlgorithm) liveLog(ks *keyspace, i int32, now int64) []logEntry {
	return liveLeases(ks.log(i), now)
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
