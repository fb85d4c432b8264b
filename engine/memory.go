package engine

import "slices"

// A shard may be given a memory limit (--maxmemory, divided among the
// shards). Its keys are charged by a deterministic estimate of what they
// hold, so that every replica that applied the same log makes the same
// choice: refuse the command, or evict the same keys. The limit itself is
// replicated state, set through the log (OpMemoryLimit), so a replica never
// applies another node's limit.

// MemoryPolicy says what a shard at its memory limit does with a command
// that would create a key. Commands on keys that exist always proceed:
// existing limits keep working whatever the flood of new keys.
type MemoryPolicy uint8

// The policies, named as Redis names them.
const (
	// NoEviction refuses the command with -OOM.
	NoEviction MemoryPolicy = iota
	// VolatileTTL evicts the keys nearest to their reset: evicting a
	// limiter gives its caller a full budget back, and the one that was
	// about to be full again loses the least. Strings without an expiry go
	// last.
	VolatileTTL
	memoryPolicies
)

// MemoryPolicyNames are the policies' names, for --maxmemory-policy.
var MemoryPolicyNames = [memoryPolicies]string{NoEviction: "noeviction", VolatileTTL: "volatile-ttl"}

// evictionSample is how many records an eviction examines to choose one.
const evictionSample = 16

// maxEvictions bounds the keys evicted to make room for one new key.
const maxEvictions = 8

// charged is the keyspace's memory as the limit counts it: a function of
// the live state only (no slice capacities, which depend on the runtime),
// close to what bytes estimates.
func (ks *keyspace) charged() int64 {
	return int64(ks.live)*(recordSize+2*indexSlotSize) + ks.longLen + 48*int64(ks.nLong) +
		logEntrySize*ks.logLen + 48*int64(ks.nLogs) + ks.valLen + 48*int64(ks.nVals) + ks.collBytes() + ks.shareLen + ks.globalLen
}

// setMemoryLimit applies OpMemoryLimit.
func (s *Shard) setMemoryLimit(c *Command, r *Result) {
	s.memLimit, s.memPolicy = c.Args[0], MemoryPolicy(c.Args[1])
	r.Type = ResOK
}

// admit makes room for n new keys, or refuses them: under the limit they
// are admitted; over it, VolatileTTL evicts keys (never those of records
// in keep, which the command is about to write) and NoEviction refuses.
func (s *Shard) admit(now int64, n int, keep []int32) error {
	if s.memLimit == 0 || n == 0 {
		return nil
	}
	ks := &s.keys
	perKey := int64(recordSize + 2*indexSlotSize)
	if s.charged()+int64(n)*perKey <= s.memLimit {
		return nil
	}
	ks.reclaim(now, 4*evictionSample) // expired keys go first, for free
	for evicted := 0; s.charged()+int64(n)*perKey > s.memLimit; evicted++ {
		if s.memPolicy != VolatileTTL || evicted == maxEvictions*n || !s.evictOne(keep) {
			s.stat.RejectedOOM++
			return ErrOOM
		}
	}
	return nil
}

// evictOne removes the record nearest to its reset among the next sample
// of records from the eviction cursor; false when there is none to evict.
func (s *Shard) evictOne(keep []int32) bool {
	ks := &s.keys
	n := ks.records.len()
	best, bestAt := int32(-1), int64(0)
	for range min(evictionSample, n) {
		if s.evictCursor >= n {
			s.evictCursor = 0
		}
		i := int32(s.evictCursor)
		s.evictCursor++
		if ks.records.at(i).params == 0 || slices.Contains(keep, i) {
			continue
		}
		if at := ks.expiresAt(i); best < 0 || at < bestAt {
			best, bestAt = i, at
		}
	}
	if best < 0 {
		return false
	}
	ks.remove(best)
	s.stat.Evicted++
	return true
}
