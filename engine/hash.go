package engine

import (
	"math"
	"strconv"

	"github.com/rlserver/rlserver/internal/resp"
)

// A hash is its fields, in the order they were first set (Redis's order for
// small hashes, which HGETALL replies in), each with its value.
type hashField struct{ name, value string }

// The errors of HINCRBY and HINCRBYFLOAT, in Redis's words.
var (
	errHashNotInteger = &Error{CodeNotInteger, "hash value is not an integer"}
	errHashNotFloat   = &Error{CodeNotInteger, "hash value is not a float"}
	errNotFloat       = &Error{CodeNotInteger, "value is not a valid float"}
	errNaN            = &Error{CodeParam, "increment would produce NaN or Infinity"}
)

// hashCommand applies the hash ops. Fields and values come packed in
// Value (see pack.go).
func (s *Shard) hashCommand(now int64, c *Command, r *Result) {
	i, err := s.collection(now, c.Key, KindHash)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	ks := &s.keys
	switch c.Op {
	case OpHGet:
		r.Type = ResNil
		if j := ks.hashField(i, c.Value); j >= 0 {
			r.Type, r.Text = ResBulk, ks.fields(i)[j].value
		}
	case OpHMGet:
		n := packedCount(c.Value)
		vs := append(make([]resp.Value, 0, 1+n), resp.Array(n))
		h := ks.fields(i)
		for v := c.Value; len(v) > 0; {
			var f []byte
			f, v, _ = nextPacked(v) // checked by the op's row
			if j := fieldIndex(h, f); j >= 0 {
				vs = append(vs, resp.Bulk(h[j].value))
			} else {
				vs = append(vs, resp.Null())
			}
		}
		r.Type, r.Values = ResValues, vs
	case OpHExists:
		r.Type = ResInt
		if ks.hashField(i, c.Value) >= 0 {
			r.Int = 1
		}
	case OpHLen:
		r.Type, r.Int = ResInt, int64(len(ks.fields(i)))
	case OpHGetAll:
		h := ks.fields(i)
		vs := append(make([]resp.Value, 0, 1+2*len(h)), resp.Map(len(h)))
		for _, f := range h {
			vs = append(vs, resp.Bulk(f.name), resp.Bulk(f.value))
		}
		r.Type, r.Values = ResValues, vs
	case OpHSet:
		s.hset(now, c, i, r)
	case OpHDel:
		r.Type = ResInt
		if i < 0 {
			return
		}
		eachPacked(c.Value, func(f []byte) {
			if j := ks.hashField(i, f); j >= 0 {
				ks.delHashField(i, j)
				r.Int++
			}
		})
		if len(ks.fields(i)) == 0 {
			ks.remove(i)
		}
	case OpHIncrBy, OpHIncrByFloat:
		s.hincr(now, c, i, r)
	}
}

// hashField is the index of field name in record i's hash, -1 if absent
// (or if i is -1).
func (ks *keyspace) hashField(i int32, name []byte) int {
	if i < 0 {
		return -1
	}
	return fieldIndex(ks.fields(i), name)
}

// fieldIndex is the index of field name in h, -1 if absent.
func fieldIndex(h []hashField, name []byte) int {
	for j := range h {
		if h[j].name == string(name) {
			return j
		}
	}
	return -1
}

// putHashField sets field name of record i's hash to value, adding it
// last when it is new.
func (ks *keyspace) putHashField(i int32, name, value []byte) {
	e := ks.records.extMut(i)
	h, ok := e.hashes[i]
	if j := fieldIndex(h, name); j >= 0 {
		ks.collLen += int64(len(value) - len(h[j].value))
		h[j].value = string(value)
		return
	}
	if !ok {
		ks.nHashes++
	}
	if e.hashes == nil {
		e.hashes = make(map[int32][]hashField)
	}
	e.hashes[i] = append(h, hashField{string(name), string(value)})
	ks.collLen += int64(len(name) + len(value))
	ks.collN += 2
}

// delHashField removes field j of record i's hash.
func (ks *keyspace) delHashField(i int32, j int) {
	e := ks.records.extMut(i)
	h := e.hashes[i]
	ks.collLen -= int64(len(h[j].name) + len(h[j].value))
	ks.collN -= 2
	copy(h[j:], h[j+1:])
	h[len(h)-1] = hashField{}
	e.hashes[i] = h[:len(h)-1]
}

// hset applies HSET and HMSET: Value packs field, value, field, value ...
// It replies the fields added (HMSET: OK, FlagStatus). A hash that would
// pass maxHashFields is left as it was.
func (s *Shard) hset(now int64, c *Command, i int32, r *Result) {
	ks := &s.keys
	pairs := unpack(s.pairs[:0], c.Value)
	s.pairs = pairs[:0]
	added := 0
	h := ks.fields(i)
	for p := 0; p+1 < len(pairs); p += 2 {
		if fieldIndex(h, pairs[p]) < 0 && !fieldBefore(pairs, p) {
			added++
		}
	}
	if len(h)+added > maxHashFields {
		r.Type, r.Err = ResError, errHashFull
		return
	}
	if i < 0 {
		var err error
		if i, err = s.createCollection(now, c.Key, KindHash); err != nil {
			r.Type, r.Err = ResError, err
			return
		}
	}
	for p := 0; p+1 < len(pairs); p += 2 {
		ks.putHashField(i, pairs[p], pairs[p+1])
	}
	r.Type, r.Int = ResInt, int64(added)
	if c.Flags&FlagStatus != 0 {
		r.Type, r.Int = ResOK, 0
	}
}

// fieldBefore reports whether pair p's field is also among the fields of
// the pairs before it.
func fieldBefore(pairs [][]byte, p int) bool {
	for q := 0; q < p; q += 2 {
		if string(pairs[q]) == string(pairs[p]) {
			return true
		}
	}
	return false
}

// hincr applies HINCRBY (Value: the field, Args[0]: the increment) and
// HINCRBYFLOAT (Value packs the field and the increment as text).
func (s *Shard) hincr(now int64, c *Command, i int32, r *Result) {
	ks := &s.keys
	field := c.Value
	var incr []byte
	if c.Op == OpHIncrByFloat {
		parts := unpack(nil, c.Value)
		field, incr = parts[0], parts[1]
	}
	var by float64
	if c.Op == OpHIncrByFloat { // Redis reads the increment first
		var ok bool
		if by, ok = parseFloat(string(incr)); !ok {
			r.Type, r.Err = ResError, errNotFloat
			return
		}
	}
	j := ks.hashField(i, field)
	if j < 0 && len(ks.fields(i)) >= maxHashFields {
		r.Type, r.Err = ResError, errHashFull
		return
	}
	var value []byte
	if c.Op == OpHIncrBy {
		var v int64
		if j >= 0 {
			var ok bool
			if v, ok = parseInteger([]byte(ks.fields(i)[j].value)); !ok {
				r.Type, r.Err = ResError, errHashNotInteger
				return
			}
		}
		by := c.Args[0]
		if (by > 0 && v > math.MaxInt64-by) || (by < 0 && v < math.MinInt64-by) {
			r.Type, r.Err = ResError, ErrOverflow
			return
		}
		v += by
		r.Type, r.Int = ResInt, v
		value = strconv.AppendInt(nil, v, 10)
	} else {
		var v float64
		if j >= 0 {
			var ok bool
			if v, ok = parseFloat(ks.fields(i)[j].value); !ok {
				r.Type, r.Err = ResError, errHashNotFloat
				return
			}
		}
		if v += by; math.IsNaN(v) || math.IsInf(v, 0) {
			r.Type, r.Err = ResError, errNaN
			return
		}
		value = formatFloat(nil, v)
		r.Type, r.Text = ResBulk, string(value)
	}
	if i < 0 {
		var err error
		if i, err = s.createCollection(now, c.Key, KindHash); err != nil {
			*r = Result{Type: ResError, Err: err}
			return
		}
	}
	ks.putHashField(i, field, value)
}

// parseFloat parses a float as Redis does for INCRBYFLOAT: decimal or
// exponent notation, no spaces, finite.
func parseFloat(s string) (float64, bool) {
	if len(s) == 0 || s[0] == ' ' || s[len(s)-1] == ' ' {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// formatFloat appends v as Redis writes the result of INCRBYFLOAT: fixed
// notation, with as few digits as read back exactly.
func formatFloat(b []byte, v float64) []byte {
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}
