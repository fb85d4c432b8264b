package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// keyCommand applies the ops that inspect or remove keys rather than decide.
func (s *Shard) keyCommand(now int64, c *Command, r *Result) {
	switch c.Op {
	case OpDel:
		i, _ := s.lookup(c.Key, now)
		r.Type = ResInt
		if i >= 0 {
			s.keys.remove(i)
			r.Int = 1
		}
	case OpExists:
		_, e := s.lookup(c.Key, now)
		r.Type = ResInt
		if e != nil {
			r.Int = 1
		}
	case OpType:
		_, e := s.lookup(c.Key, now)
		r.Type, r.Text = ResText, kindNone.String()
		if e != nil {
			r.Text = e.kind.String()
		}
	case OpPTTL, OpTTL:
		_, e := s.lookup(c.Key, now)
		r.Type, r.Int = ResInt, -2
		if e != nil {
			r.Int = e.expiresAt() - now
			if c.Op == OpTTL {
				r.Int = (r.Int + 500) / 1000 // Redis rounds TTL to the nearest second
			}
		}
	case OpInfo:
		_, e := s.lookup(c.Key, now)
		r.Type = ResNil
		if e != nil {
			r.Type, r.Fields = ResFields, describe(e, now)
		}
	case OpUsage:
		_, e := s.lookup(c.Key, now)
		r.Type = ResNil
		if e != nil {
			r.Type, r.Int = ResInt, s.keys.usage(e)
		}
	case OpDBSize:
		r.Type, r.Int = ResInt, int64(s.keys.len())
	case OpScan:
		s.scan(now, c, r)
	case OpFlush:
		s.keys = newKeyspace()
		r.Type = ResOK
	case OpDigest:
		r.Type, r.Text = ResBulk, s.digest()
	case OpSweep:
		s.keys.reclaim(now, int(min(c.Args[0], int64(len(s.keys.slots)))))
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
	slots := s.keys.slots
	for ; pos < int64(len(slots)) && count > 0; pos, count = pos+1, count-1 {
		e := &slots[pos]
		if e.kind == kindNone || e.expiresAt() <= now || (kind != kindNone && e.kind != kind) {
			continue
		}
		r.Keys = append(r.Keys, e.key)
	}
	if pos < int64(len(slots)) {
		r.Cursor = uint64(pos)
	}
}

// digest is the hex SHA-256 of the live keys and their state, in key order:
// replicas that applied the same log have the same digest.
func (s *Shard) digest() string {
	live := make([]*entry, 0, s.keys.len())
	for i := range s.keys.slots {
		if e := &s.keys.slots[i]; e.kind != kindNone && e.expiresAt() > s.now {
			live = append(live, e)
		}
	}
	slices.SortFunc(live, func(a, b *entry) int { return strings.Compare(a.key, b.key) })
	h := sha256.New()
	var buf []byte
	for _, e := range live {
		buf = appendEntry(buf[:0], e, s.now)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// describe lists a key's algorithm, parameters, state as of now, and what a
// peek would report, for RL.INFO.
func describe(e *entry, now int64) []Field {
	f := []Field{{Name: "algorithm", Text: e.kind.String()}}
	var d Decision
	switch e.kind {
	case KindSliding:
		w, st := e.sliding()
		st, d = w.Decide(st, now, 0)
		f = append(f, Field{Name: "limit", Int: w.Limit}, Field{Name: "window_ms", Int: w.Window},
			Field{Name: "window_start_ms", Int: st.Start}, Field{Name: "previous_count", Int: st.Prev},
			Field{Name: "current_count", Int: st.Cur})
	case KindFixed:
		w, st := e.fixed()
		st, d = w.Decide(st, now, 0)
		f = append(f, Field{Name: "limit", Int: w.Limit}, Field{Name: "window_ms", Int: w.Window},
			Field{Name: "window_start_ms", Int: st.Start}, Field{Name: "count", Int: st.Count})
	case KindLog:
		l, entries := e.slidingLog()
		entries, d = l.Decide(entries, now, 0)
		f = append(f, Field{Name: "limit", Int: l.Limit}, Field{Name: "window_ms", Int: l.Window},
			Field{Name: "count", Int: l.used(entries)}, Field{Name: "entries", Int: int64(len(entries))})
	case KindToken:
		b, st := e.bucket()
		_, d = b.Decide(st, now, 0)
		f = append(f, Field{Name: "capacity", Int: b.Capacity}, Field{Name: "refill_tokens", Int: b.Rate},
			Field{Name: "refill_ms", Int: b.Period}, Field{Name: "tokens", Int: d.Remaining})
	case KindLeaky:
		b, st := e.bucket()
		_, d = b.Decide(st, now, 0)
		f = append(f, Field{Name: "capacity", Int: b.Capacity}, Field{Name: "leak_tokens", Int: b.Rate},
			Field{Name: "leak_ms", Int: b.Period}, Field{Name: "level", Int: b.Capacity - d.Remaining})
	case KindGCRA:
		b, st := e.bucket()
		_, d = b.Decide(st, now, 0)
		f = append(f, Field{Name: "burst", Int: b.Capacity - 1}, Field{Name: "count", Int: b.Rate},
			Field{Name: "period_ms", Int: b.Period}, Field{Name: "tat_ms", Int: now + d.ResetAfter})
	case KindThrottle:
		t, tat := e.throttle()
		_, reply := t.Decide(tat, now, 0)
		d = Decision{Limit: reply.Limit, Remaining: reply.Remaining}
		d.ResetAfter = throttleExpiresAt(max(tat, now*nsPerMs)) - now
		f = append(f, Field{Name: "max_burst", Int: t.MaxBurst}, Field{Name: "count", Int: t.Count},
			Field{Name: "period_s", Int: t.Period}, Field{Name: "tat_ns", Int: tat})
	}
	return append(f, Field{Name: "remaining", Int: d.Remaining},
		Field{Name: "reset_after_ms", Int: d.ResetAfter}, Field{Name: "ttl_ms", Int: e.expiresAt() - now})
}

// Inspect answers a read-only, shard-wide command (OpDBSize, OpScan,
// OpDigest) at the shard's own time and changes nothing, not even the clock
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
	default:
		r.Type, r.Err = ResError, ErrUnknownOp
	}
	return r
}
