package commands

import (
	"fmt"
	"strconv"

	"github.com/rlserver/rlserver/engine"
)

// Redis's hash and list commands and RENAME, for the limiters that keep
// their state in them. Their errors are Redis's.

var (
	errPackedTooLong = fmt.Errorf("ERR the command's fields and values are longer than the %d bytes a command may carry", engine.MaxValue)
	errNotPositive   = fmt.Errorf("ERR value is out of range, must be positive")
)

// packed packs vals into one value, refusing more than a command carries.
func packed(vals [][]byte) ([]byte, error) {
	v := engine.Pack(vals)
	if len(v) > engine.MaxValue {
		return nil, errPackedTooLong
	}
	return v, nil
}

// fieldParser parses "CMD key field": HGET, HEXISTS.
func fieldParser(op engine.Op) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		return append(dst, engine.Command{Op: op, Key: args[1], Value: args[2]}), nil
	}
}

// packedParser parses "CMD key value [value ...]": HMGET, HDEL, LPUSH,
// RPUSH (flags FlagRight), the values packed.
func packedParser(op engine.Op, flags engine.Flags) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		v, err := packed(args[2:])
		if err != nil {
			return dst, err
		}
		return append(dst, engine.Command{Op: op, Key: args[1], Value: v, Flags: flags}), nil
	}
}

// hsetParser parses HSET and HMSET (status: reply OK): "key field value
// [field value ...]".
func hsetParser(name string, status bool) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		if len(args)%2 != 0 {
			return dst, WrongArity(name)
		}
		v, err := packed(args[2:])
		if err != nil {
			return dst, err
		}
		c := engine.Command{Op: engine.OpHSet, Key: args[1], Value: v}
		if status {
			c.Flags = engine.FlagStatus
		}
		return append(dst, c), nil
	}
}

// parseHIncrBy parses "HINCRBY key field increment".
func parseHIncrBy(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	by, ok := ParseInt(args[3])
	if !ok {
		return dst, ErrNotInteger
	}
	return append(dst, engine.Command{Op: engine.OpHIncrBy, Key: args[1], Value: args[2], Args: [4]int64{by}}), nil
}

// parseHIncrByFloat parses "HINCRBYFLOAT key field increment". The
// increment is checked here, before the key's type, as Redis checks it,
// and handed to the engine (which reads it again) in the shortest decimal
// that reads back the same double: every release's engine reads that alike.
func parseHIncrByFloat(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	by, err := parseIncrement(args[3])
	if err != nil {
		return dst, err
	}
	v, err := packed([][]byte{args[2], strconv.AppendFloat(nil, by, 'g', -1, 64)})
	if err != nil {
		return dst, err
	}
	return append(dst, engine.Command{Op: engine.OpHIncrByFloat, Key: args[1], Value: v}), nil
}

// popParser parses "LPOP|RPOP key [count]".
func popParser(name string, flags engine.Flags) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		c := engine.Command{Op: engine.OpPop, Key: args[1], Flags: flags}
		switch len(args) {
		case 2:
		case 3:
			n, ok := ParseInt(args[2])
			if !ok || n < 0 {
				return dst, errNotPositive
			}
			c.Args[0], c.Args[1] = n, 1
		default:
			return dst, WrongArity(name)
		}
		return append(dst, c), nil
	}
}

// intsParser parses "CMD key int [int]": LINDEX, LRANGE, LTRIM.
func intsParser(op engine.Op) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		c := engine.Command{Op: op, Key: args[1]}
		for i, a := range args[2:] {
			v, ok := ParseInt(a)
			if !ok {
				return dst, ErrNotInteger
			}
			c.Args[i] = v
		}
		return append(dst, c), nil
	}
}

// renameParser parses "RENAME key newkey" (nx: RENAMENX).
func renameParser(nx bool) parser {
	return func(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
		c := engine.Command{Op: engine.OpRename, Key: args[1], Value: args[2]}
		if nx {
			c.Flags = engine.FlagNX
		}
		return append(dst, c), nil
	}
}

// collectionSpec builds the spec of a hash or list command on one key.
func collectionSpec(id ID, name string, arity int, flags []string, group, summary string, parse parser, args ...Arg) *Spec {
	s := stringSpec(id, name, arity, flags, group, summary, parse, args...)
	s.Since = "1.3.0"
	if arity < 0 || len(args) > 1 {
		s.Complexity = "O(N) where N is the number of fields or elements"
	}
	return s
}

var (
	argField  = Arg{Name: "field", Type: "string"}
	argFields = Arg{Name: "field", Type: "string", Multiple: true}
	argPairs  = Arg{Name: "data", Type: "block", Multiple: true, Args: []Arg{argField, argValue}}
	argElems  = Arg{Name: "element", Type: "string", Multiple: true}
	argCount  = Arg{Name: "count", Type: "integer", Optional: true}
	readFast  = []string{"readonly", "fast"}
	readSlow  = []string{"readonly"}
	writeSlow = []string{"write"}
)

// collectionSpecs are the hash and list commands, and RENAME.
var collectionSpecs = []*Spec{
	collectionSpec(IDHGet, "hget", 3, readFast, "hash", "The value of a hash's field; nil if absent.", fieldParser(engine.OpHGet), argField),
	collectionSpec(IDHSet, "hset", -4, writeFast, "hash", "Sets fields of a hash. Replies the number of fields added.", hsetParser("hset", false), argPairs),
	collectionSpec(IDHMSet, "hmset", -4, writeFast, "hash", "Sets fields of a hash (as HSET). Replies OK.", hsetParser("hmset", true), argPairs),
	collectionSpec(IDHMGet, "hmget", -3, readFast, "hash", "The values of a hash's fields, nil for those absent.", packedParser(engine.OpHMGet, 0), argFields),
	collectionSpec(IDHIncrBy, "hincrby", 4, writeFast, "hash", "Adds an integer to a hash's field (0 if absent).", parseHIncrBy, argField, argIncr),
	collectionSpec(IDHIncrByFloat, "hincrbyfloat", 4, writeFast, "hash", "Adds a float to a hash's field (0 if absent).", parseHIncrByFloat, argField, argIncr),
	collectionSpec(IDHDel, "hdel", -3, writeNoOOM, "hash", "Removes fields of a hash. Replies the number removed.", packedParser(engine.OpHDel, 0), argFields),
	collectionSpec(IDHExists, "hexists", 3, readFast, "hash", "Replies 1 if the hash has the field.", fieldParser(engine.OpHExists), argField),
	collectionSpec(IDHGetAll, "hgetall", 2, readSlow, "hash", "Every field of a hash and its value, in the order they were first set.", keyParser(engine.OpHGetAll)),
	collectionSpec(IDHLen, "hlen", 2, readFast, "hash", "The number of fields of a hash.", keyParser(engine.OpHLen)),
	collectionSpec(IDLPush, "lpush", -3, writeFast, "list", "Pushes elements at a list's head. Replies its length.", packedParser(engine.OpPush, 0), argElems),
	collectionSpec(IDRPush, "rpush", -3, writeFast, "list", "Pushes elements at a list's tail. Replies its length.", packedParser(engine.OpPush, engine.FlagRight), argElems),
	collectionSpec(IDLPop, "lpop", -2, writeNoOOM, "list", "Removes and replies the first elements of a list.", popParser("lpop", 0), argCount),
	collectionSpec(IDRPop, "rpop", -2, writeNoOOM, "list", "Removes and replies the last elements of a list.", popParser("rpop", engine.FlagRight), argCount),
	collectionSpec(IDLIndex, "lindex", 3, readSlow, "list", "The element at an index of a list (negative: from the tail); nil if none.",
		intsParser(engine.OpLIndex), Arg{Name: "index", Type: "integer"}),
	collectionSpec(IDLRange, "lrange", 4, readSlow, "list", "The elements of a list from start to stop, inclusive (negative: from the tail).",
		intsParser(engine.OpLRange), Arg{Name: "start", Type: "integer"}, Arg{Name: "stop", Type: "integer"}),
	collectionSpec(IDLTrim, "ltrim", 4, writeSlow, "list", "Keeps only the elements of a list from start to stop, inclusive.",
		intsParser(engine.OpLTrim), Arg{Name: "start", Type: "integer"}, Arg{Name: "stop", Type: "integer"}),
	collectionSpec(IDLLen, "llen", 2, readFast, "list", "The length of a list.", keyParser(engine.OpLLen)),
	renameSpec(IDRename, "rename", "Renames a key of any kind, replacing a key of the new name. Both keys must share a hash slot.", renameParser(false)),
	renameSpec(IDRenameNX, "renamenx", "Renames a key if the new name is free. Replies 1 if renamed. Both keys must share a hash slot.", renameParser(true)),
}

// renameSpec builds RENAME's and RENAMENX's specs: two keys, in one slot
// even on a standalone server, since one shard renames.
func renameSpec(id ID, name, summary string, parse parser) *Spec {
	return &Spec{
		ID: id, Name: name, Arity: 3, Flags: []string{"write"}, FirstKey: 1, LastKey: 2, KeyStep: 1,
		Categories: []string{"@keyspace", "@write", "@slow"}, Group: "generic", Since: "1.3.0", Complexity: "O(1)",
		Summary: summary, Args: []Arg{argKey, {Name: "newkey", Type: "key"}}, Route: RouteKey, SameSlot: true, parse: parse,
	}
}
