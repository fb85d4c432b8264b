package engine

import "math"

// Redis strings, for the limiters written against Redis: INCR/INCRBY with
// EXPIRE (envoyproxy/ratelimit's fixed window), SET NX PX, GET. A string's
// record holds its value in state[0] when it is an integer Redis would
// accept (strings that are not live in their chunk's extras, with state[2] 1), and
// its expiry, an absolute time in ms, in state[1] (0: none).

// The ways OpSet and OpExpire give an expiry (Args[1]).
const (
	ExpiryNone     = 0 // SET: no expiry
	ExpiryRelative = 1 // Args[0] ms from now
	ExpiryAbsolute = 2 // Args[0] is a Unix time in ms
	ExpiryPersist  = 3 // EXPIRE: remove the expiry (PERSIST)
)

// MaxValue bounds a string's value.
const MaxValue = 1 << 20

// MaxExpiry bounds an absolute expiry: no later than MaxDuration after the
// latest clock a shard may have.
const MaxExpiry = MaxTime + MaxDuration

// stringCommand applies GET, SET, INCRBY and EXPIRE.
func (s *Shard) stringCommand(now int64, c *Command, r *Result) {
	i := s.lookup(c.Key, now)
	if i >= 0 && s.keys.kind(i) != KindString && c.Op != OpSet && c.Op != OpExpire {
		r.Type, r.Err = ResError, ErrWrongType
		return
	}
	switch c.Op {
	case OpGet:
		s.keys.getString(i, r)
	case OpSet:
		s.set(now, c, i, r)
	case OpIncrBy:
		s.incrBy(now, c, i, r)
	case OpExpire:
		s.expire(now, c, i, r)
	}
}

// getString replies record i's value, or nil when i is -1.
func (ks *keyspace) getString(i int32, r *Result) {
	switch {
	case i < 0:
		r.Type = ResNil
	case ks.records.at(i).state[2] == 1:
		r.Type, r.Text = ResBulk, ks.value(i)
	default:
		r.Type, r.Int = ResIntBulk, ks.records.at(i).state[0]
	}
}

// set applies SET: Flags NX, XX, KEEPTTL and GET; the expiry as Args[0] and
// Args[1] say. Like Redis's, it replaces a key of any type, except with GET,
// which needs the old value to be a string.
func (s *Shard) set(now int64, c *Command, i int32, r *Result) {
	ks := &s.keys
	if c.Flags&FlagGet != 0 {
		if i >= 0 && ks.kind(i) != KindString {
			r.Type, r.Err = ResError, ErrWrongType
			return
		}
		ks.getString(i, r)
	} else {
		r.Type = ResOK
	}
	if (c.Flags&FlagNX != 0 && i >= 0) || (c.Flags&FlagXX != 0 && i < 0) {
		if c.Flags&FlagGet == 0 {
			r.Type = ResNil
		}
		return
	}
	expiry := int64(0)
	switch {
	case c.Args[1] == ExpiryRelative:
		expiry = now + c.Args[0]
	case c.Args[1] == ExpiryAbsolute:
		expiry = c.Args[0]
	case c.Flags&FlagKeepTTL != 0 && i >= 0 && ks.kind(i) == KindString:
		expiry = ks.records.at(i).state[1]
	}
	if c.Args[1] != ExpiryNone && expiry <= now {
		if i >= 0 { // set and expired at once: Redis deletes the key
			ks.remove(i)
		}
		return
	}
	if i < 0 {
		if err := s.admit(now, 1, nil); err != nil {
			r.Type, r.Text, r.Err = ResError, "", err
			return
		}
		i = ks.add(c.Key, KindString, [3]int64{})
	} else {
		if ks.persists(i) {
			ks.persistent--
		}
		ks.dropExtras(i)
	}
	n, isInt := parseInteger(c.Value)
	state := [3]int64{n, expiry, 0}
	if !isInt {
		state = [3]int64{0, expiry, 1}
		ks.setValue(i, string(c.Value), true)
	}
	ks.set(i, KindString, [3]int64{}, state)
	if expiry == 0 {
		ks.persistent++
	}
}

// persists reports whether record i is a string, hash or list without an
// expiry: the keys INFO does not count among those that expire.
func (ks *keyspace) persists(i int32) bool {
	return settableExpiry(ks.kind(i)) && ks.records.at(i).state[1] == 0
}

// settableExpiry reports whether keys of kind have an expiry of their own,
// which EXPIRE sets, in state[1]: Redis's types. A limiter's expiry follows
// from its state.
func settableExpiry(k Kind) bool {
	return k == KindString || k == KindHash || k == KindList
}

// incrBy applies INCRBY (and INCR, DECR, DECRBY): Args[0] is added to the
// integer held, 0 for a new key; the expiry is kept.
func (s *Shard) incrBy(now int64, c *Command, i int32, r *Result) {
	ks := &s.keys
	var v int64
	if i >= 0 {
		if ks.records.at(i).state[2] == 1 {
			r.Type, r.Err = ResError, ErrNotInteger
			return
		}
		v = ks.records.at(i).state[0]
	}
	by := c.Args[0]
	if (by > 0 && v > math.MaxInt64-by) || (by < 0 && v < math.MinInt64-by) {
		r.Type, r.Err = ResError, ErrOverflow
		return
	}
	v += by
	if i < 0 {
		if err := s.admit(now, 1, nil); err != nil {
			r.Type, r.Err = ResError, err
			return
		}
		i = ks.add(c.Key, KindString, [3]int64{})
		ks.persistent++
	}
	ks.records.mut(i).state[0] = v
	r.Type, r.Int = ResInt, v
}

// expire applies EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (Args[0] and Args[1]
// give the time; Flags NX, XX, GT, LT the condition) and PERSIST to a
// string, hash or list: 1 when the expiry changed. A limiter's expiry
// follows from its state, so it cannot be set: 0 for a limiter key.
func (s *Shard) expire(now int64, c *Command, i int32, r *Result) {
	ks := &s.keys
	r.Type = ResInt
	if i < 0 || !settableExpiry(ks.kind(i)) {
		return
	}
	cur := ks.records.at(i).state[1] // 0: none, which compares as infinite
	if c.Args[1] == ExpiryPersist {
		if cur != 0 {
			ks.records.mut(i).state[1] = 0
			ks.persistent++
			r.Int = 1
		}
		return
	}
	at := c.Args[0]
	if c.Args[1] == ExpiryRelative {
		at = now + c.Args[0]
	}
	f := c.Flags
	if (f&FlagNX != 0 && cur != 0) || (f&FlagXX != 0 && cur == 0) ||
		(f&FlagGT != 0 && (cur == 0 || at <= cur)) || (f&FlagLT != 0 && cur != 0 && at >= cur) {
		return
	}
	r.Int = 1
	if at <= now {
		ks.remove(i)
		return
	}
	if cur == 0 {
		ks.persistent--
	}
	ks.records.mut(i).state[1] = at
}

// parseInteger parses v as Redis does for INCR: decimal, an optional minus,
// no leading zeros, no plus, within int64.
func parseInteger(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 || (v[0] == '0' && len(v) > 1) || v[0] == '+' ||
		(v[0] == '-' && (len(v) == 1 || v[1] == '0')) {
		return 0, false
	}
	neg := v[0] == '-'
	if neg {
		v = v[1:]
	}
	var n uint64
	for _, ch := range v {
		if ch < '0' || ch > '9' || n > (math.MaxInt64+1)/10 {
			return 0, false
		}
		if n = n*10 + uint64(ch-'0'); n > math.MaxInt64+1 {
			return 0, false
		}
	}
	switch {
	case neg:
		return int64(-n), true // -(MaxInt64+1) wraps to MinInt64
	case n > math.MaxInt64:
		return 0, false
	}
	return int64(n), true
}

// stringExpiresAt is when a string's record expires: never without one.
func stringExpiresAt(st [3]int64) int64 {
	if st[1] == 0 {
		return math.MaxInt64
	}
	return st[1]
}

// stringKind is a Redis string's record: its integer or the mark of a value
// kept aside, and its expiry.
type stringKind struct{}

func (stringKind) expiresAt(ks *keyspace, i int32) int64 {
	return stringExpiresAt(ks.records.at(i).state)
}

// describe gives a string's expiry only: it has no budget.
func (stringKind) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	ttl := int64(-1)
	if at := ks.records.at(i).state[1]; at != 0 {
		ttl = at - now
	}
	return append(f, Field{Name: "ttl_ms", Int: ttl})
}

// valid checks a string: no parameters, an expiry in range, and a value kept
// aside only without an integer.
func (stringKind) valid(params, st [3]int64, _ []logEntry) bool {
	return params == [3]int64{} && st[1] >= 0 && st[1] <= MaxExpiry && (st[2] == 0 || (st[2] == 1 && st[0] == 0))
}

// checkSet checks SET's value and expiry.
func checkSet(c Command) error {
	if len(c.Value) > MaxValue || !validExpiry(c.Args[0], c.Args[1], ExpiryAbsolute) {
		return paramError("invalid SET")
	}
	return nil
}

// checkExpire checks EXPIRE's time and mode.
func checkExpire(c Command) error {
	if !validExpiry(c.Args[0], c.Args[1], ExpiryPersist) || c.Args[1] == ExpiryNone {
		return paramError("invalid EXPIRE")
	}
	return nil
}

// validExpiry checks an expiry given as value v in mode (up to maxMode):
// relative, at most MaxDuration; absolute, within [0, MaxExpiry].
func validExpiry(v, mode, maxMode int64) bool {
	switch {
	case mode < ExpiryNone || mode > maxMode:
		return false
	case mode == ExpiryRelative:
		return v >= -MaxDuration && v <= MaxDuration
	case mode == ExpiryAbsolute:
		return v >= 0 && v <= MaxExpiry
	}
	return v == 0
}
