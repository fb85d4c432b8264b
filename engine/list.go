package engine

import "github.com/rlserver/rlserver/internal/resp"

// A list is stored tail first, so that LPUSH, the push limiters use
// (Python limits' moving window pushes each request's time at the head),
// appends: Redis's index k (0 the head, -1 the tail) is element n-1-k.

// listCommand applies the list ops. Elements come packed in Value.
func (s *Shard) listCommand(now int64, c *Command, r *Result) {
	i, err := s.collection(now, c.Key, KindList)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	ks := &s.keys
	l := ks.list(i)
	switch c.Op {
	case OpLLen:
		r.Type, r.Int = ResInt, int64(len(l))
	case OpLIndex:
		r.Type = ResNil
		if k, ok := listIndex(c.Args[0], len(l)); ok {
			r.Type, r.Text = ResBulk, l[len(l)-1-k]
		}
	case OpLRange:
		from, to := listRange(c.Args[0], c.Args[1], len(l))
		vs := append(make([]resp.Value, 0, 1+max(to-from, 0)), resp.Array(max(to-from, 0)))
		for k := from; k < to; k++ {
			vs = append(vs, resp.Bulk(l[len(l)-1-k]))
		}
		r.Type, r.Values = ResValues, vs
	case OpLTrim:
		r.Type = ResOK
		if i < 0 {
			return
		}
		from, to := listRange(c.Args[0], c.Args[1], len(l))
		if from >= to {
			ks.remove(i)
			return
		}
		// Keep Redis's [from, to): stored [n-to, n-from).
		ks.setList(i, l[len(l)-to:len(l)-from])
	case OpPush:
		s.push(now, c, i, r)
	case OpPop:
		s.pop(c, i, r)
	}
}

// listIndex turns Redis's index k (negative: from the tail) into one from
// the head, within a list of n.
func listIndex(k int64, n int) (int, bool) {
	if k < 0 {
		k += int64(n)
	}
	if k < 0 || k >= int64(n) {
		return 0, false
	}
	return int(k), true
}

// listRange turns LRANGE's and LTRIM's start and stop (inclusive, negative
// from the tail) into [from, to) from the head, within a list of n.
func listRange(start, stop int64, n int) (from, to int) {
	if start < 0 {
		start = max(start+int64(n), 0)
	}
	if stop < 0 {
		stop += int64(n)
	}
	stop = min(stop, int64(n)-1)
	if start > stop || start >= int64(n) {
		return 0, 0
	}
	return int(start), int(stop) + 1
}

// setList replaces record i's list with l (a part of the old one, or a new
// slice), keeping the charges right.
func (ks *keyspace) setList(i int32, l []string) {
	e := ks.records.extMut(i)
	old, ok := e.lists[i]
	if !ok {
		ks.nLists++
	}
	for _, e := range old {
		ks.collLen -= int64(len(e))
	}
	ks.collN -= int64(len(old))
	kept := make([]string, len(l), max(len(l), 4))
	copy(kept, l)
	for _, e := range kept {
		ks.collLen += int64(len(e))
	}
	ks.collN += int64(len(kept))
	if e.lists == nil {
		e.lists = make(map[int32][]string)
	}
	e.lists[i] = kept
}

// push applies LPUSH and RPUSH (FlagRight): the elements packed in Value,
// each pushed in turn. It replies the list's new length.
func (s *Shard) push(now int64, c *Command, i int32, r *Result) {
	ks := &s.keys
	n := packedCount(c.Value)
	if len(ks.list(i))+n > maxListLen {
		r.Type, r.Err = ResError, errListFull
		return
	}
	if i < 0 {
		var err error
		if i, err = s.createCollection(now, c.Key, KindList); err != nil {
			r.Type, r.Err = ResError, err
			return
		}
	}
	e := ks.records.extMut(i)
	l, ok := e.lists[i]
	if c.Flags&FlagRight != 0 {
		// RPUSH a b c: the tail becomes c, b, a stored first.
		pushed := make([]string, 0, n+len(l))
		elems := unpack(nil, c.Value)
		for k := len(elems) - 1; k >= 0; k-- {
			pushed = append(pushed, string(elems[k]))
		}
		l = append(pushed, l...)
	} else {
		eachPacked(c.Value, func(e []byte) { l = append(l, string(e)) })
	}
	eachPacked(c.Value, func(e []byte) { ks.collLen += int64(len(e)) })
	ks.collN += int64(n)
	if !ok {
		ks.nLists++
	}
	if e.lists == nil {
		e.lists = make(map[int32][]string)
	}
	e.lists[i] = l
	r.Type, r.Int = ResInt, int64(len(l))
}

// pop applies LPOP and RPOP (FlagRight): one element, or with a count
// (Args[1] 1) up to Args[0] elements as an array.
func (s *Shard) pop(c *Command, i int32, r *Result) {
	ks := &s.keys
	withCount := c.Args[1] == 1
	if i < 0 {
		r.Type = ResNil
		if withCount {
			r.Type = ResNilArray
		}
		return
	}
	l := ks.list(i)
	n := 1
	if withCount {
		n = int(min(c.Args[0], int64(len(l))))
	}
	popped := make([]string, 0, n)
	for range n {
		if c.Flags&FlagRight != 0 {
			popped = append(popped, l[0])
			l = l[1:]
		} else {
			popped = append(popped, l[len(l)-1])
			l = l[:len(l)-1]
		}
	}
	if len(l) == 0 {
		ks.remove(i)
	} else {
		ks.setList(i, l)
	}
	if !withCount {
		r.Type, r.Text = ResBulk, popped[0]
		return
	}
	vs := append(make([]resp.Value, 0, 1+len(popped)), resp.Array(len(popped)))
	for _, e := range popped {
		vs = append(vs, resp.Bulk(e))
	}
	r.Type, r.Values = ResValues, vs
}
