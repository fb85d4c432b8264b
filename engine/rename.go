package engine

// ErrNoSuchKey is RENAME's error for a source key that does not exist.
var ErrNoSuchKey = &Error{CodeNoSuchKey, "no such key"}

// errRenameGlobal refuses to rename a global key: its name is what every
// region and its home know it by.
var errRenameGlobal = &Error{CodeParam, "a global key cannot be renamed"}

// rename applies RENAME and RENAMENX (FlagNX): the key Key, of any kind,
// takes the name Value with its state and expiry, replacing a key of that
// name (RENAMENX: unless there is one, replying 0). Both keys are in this
// shard: the server refuses keys of different slots.
func (s *Shard) rename(now int64, c *Command, r *Result) {
	i := s.lookup(c.Key, now)
	if i < 0 {
		r.Type, r.Err = ResError, ErrNoSuchKey
		return
	}
	if s.keys.kind(i) == KindGlobal {
		r.Type, r.Err = ResError, errRenameGlobal
		return
	}
	nx := c.Flags&FlagNX != 0
	r.Type = ResOK
	if nx {
		r.Type, r.Int = ResInt, 1
	}
	if string(c.Key) == string(c.Value) {
		if nx {
			r.Int = 0
		}
		return
	}
	if j := s.lookup(c.Value, now); j >= 0 {
		if nx {
			r.Int = 0
			return
		}
		s.keys.remove(j)
	}
	s.keys.rekey(i, c.Value)
}
