package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
)

// applyKeyspaceOp applies the ops that inspect or remove keys rather than decide.
func (s *Shard) applyKeyspaceOp(now int64, c *Command, r *Result) {
	switch c.Op {
	case OpDel:
		i := s.lookup(c.Key, now)
		r.Type = ResInt
		if i >= 0 {
			s.keys.remove(i)
			r.Int = 1
		}
	case OpExists:
		r.Type = ResInt
		if s.lookup(c.Key, now) >= 0 {
			r.Int = 1
		}
	case OpType:
		i := s.lookup(c.Key, now)
		r.Type, r.Text = ResText, kindNone.String()
		if i >= 0 {
			r.Text = s.keys.kind(i).String()
		}
	case OpPTTL, OpTTL:
		i := s.lookup(c.Key, now)
		r.Type, r.Int = ResInt, -2
		if at := int64(0); i >= 0 {
			if at = s.keys.expiresAt(i); at == math.MaxInt64 {
				r.Int = -1 // a string without an expiry
				break
			}
			r.Int = at - now
			if c.Op == OpTTL {
				r.Int = (r.Int + 500) / 1000 // Redis rounds TTL to the nearest second
			}
		}
	case OpInfo:
		i := s.lookup(c.Key, now)
		r.Type = ResNil
		if i >= 0 {
			r.Type, r.Fields = ResFields, s.reservationFields(s.keys.describe(i, now), c.Key, now)
		}
	case OpUsage:
		i := s.lookup(c.Key, now)
		r.Type = ResNil
		if i >= 0 {
			r.Type, r.Int = ResInt, s.keys.usage(i)
		}
	case OpDBSize:
		r.Type, r.Int = ResInt, int64(s.keys.len())
	case OpScan:
		s.scan(now, c, r)
	case OpFlush:
		// Counters, which outlive the keys as the shard's others do.
		counts, copies := s.keys.shareStat, s.keys.records.cow.copies
		s.keys = newKeyspace()
		s.keys.shareStat, s.keys.records.cow.copies = counts, copies
		s.res.flush() // the reservations are the keys' too; policies and scripts stay
		r.Type = ResOK
	case OpDigest:
		r.Type, r.Text = ResBulk, s.digest()
	case OpSweep:
		s.keys.reclaim(now, int(min(c.Args[0], int64(s.keys.records.len()))))
		r.Type = ResOK
	default:
		r.Type, r.Err = ResError, ErrUnknownOp
	}
}

// scan walks up to Args[1] slots from the cursor Args[0] and returns the live
// keys among them (of kind Args[2] when it is not 0) and the cursor to resume
// from, 0 at the end. A key held for the whole scan is returned exactly once:
// keys never move between slots.
func (s *Shard) scan(now int64, c *Command, r *Result) {
	pos, count, kind := c.Args[0], max(c.Args[1], 1), Kind(c.Args[2])
	r.Type = ResScan
	ks := &s.keys
	n := int64(ks.records.len())
	for ; pos < n && count > 0; pos, count = pos+1, count-1 {
		i := int32(pos)
		if ks.records.at(i).params == 0 || ks.expiresAt(i) <= now || (kind != kindNone && ks.kind(i) != kind) {
			continue
		}
		r.Keys = append(r.Keys, string(ks.key(i)))
	}
	if pos < n {
		r.Cursor = uint64(pos)
	}
}

// liveRecords lists the records live at the shard's time.
func (s *Shard) liveRecords() []int32 {
	ks := &s.keys
	live := make([]int32, 0, ks.len())
	for i := range int32(ks.records.len()) {
		if ks.records.at(i).params != 0 && ks.expiresAt(int32(i)) > s.now {
			live = append(live, int32(i))
		}
	}
	return live
}

// digest is the hex SHA-256 of the live keys and their state, in key order:
// replicas that applied the same log have the same digest.
func (s *Shard) digest() string {
	live := s.liveRecords()
	slices.SortFunc(live, func(a, b int32) int { return bytes.Compare(s.keys.key(a), s.keys.key(b)) })
	h := sha256.New()
	var buf []byte
	for _, i := range live {
		buf = appendEntry(buf[:0], &s.keys, i, s.now)
		h.Write(buf)
	}
	h.Write(s.appendSettings(buf[:0]))
	return hex.EncodeToString(h.Sum(nil))
}

// describe lists a key's algorithm, parameters, state as of now, and what a
// peek would report, for RL.INFO.
func (ks *keyspace) describe(i int32, now int64) []Field {
	kind := ks.kind(i)
	return kinds[kind].describe(ks, i, now, []Field{{Name: "algorithm", Text: kind.String()}})
}

// Inspect answers a read-only command (OpDBSize, OpScan, OpDigest,
// OpPolicyList, OpTop, OpGlobalScan, OpWatch's read) at the shard's own time and changes nothing, not even the clock
// or the expiry sweep: a replica may answer it between batches and still
// agree with every other replica about its state.
func (s *Shard) Inspect(c *Command) Result {
	var r Result
	switch c.Op {
	case OpDBSize:
		r.Type, r.Int = ResInt, int64(s.keys.len())
	case OpScan:
		s.scan(s.now, c, &r)
	case OpDigest:
		r.Type, r.Text = ResBulk, s.digest()
	case OpPolicyList:
		r = s.listPolicies(string(c.Value))
	case OpTop:
		r = s.topResult(c)
	case OpGlobalScan:
		s.globalScan(s.now, c, &r)
	case OpWatch:
		if c.Args[0] != WatchRead {
			return Result{Type: ResError, Err: ErrUnknownOp}
		}
		r.Type, r.Text = ResBulk, s.fingerprint(c.Key, s.now)
	default:
		r.Type, r.Err = ResError, ErrUnknownOp
	}
	return r
}
