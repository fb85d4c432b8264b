package server

import (
	"errors"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// Redis's texts for COMMAND GETKEYS errors.
var (
	errInvalidCommand  = errors.New("ERR Invalid command specified")
	errInvalidArgCount = errors.New("ERR Invalid number of arguments specified for command")
	errNoKeys          = errors.New("ERR The command has no key arguments")
)

// The COMMAND command describes the command table the way Redis 7 does:
// redis-py needs the key positions in cluster mode, redis-cli builds its
// hints from COMMAND DOCS.

// commandAll is COMMAND alone: every command's entry.
func (c *conn) commandAll(out []byte) []byte {
	resp3 := c.resp3.Load()
	all := commands.All()
	out = resp.AppendArray(out, len(all))
	for _, s := range all {
		out = appendCommandInfo(out, s, resp3)
	}
	return out
}

// commandCount is COMMAND COUNT.
func (c *conn) commandCount(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return resp.AppendInt(out, int64(len(commands.All())))
}

// commandList is COMMAND LIST: every command's name.
func (c *conn) commandList(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	all := commands.All()
	out = resp.AppendArray(out, len(all))
	for _, s := range all {
		out = resp.AppendBulkString(out, s.Name)
	}
	return out
}

// commandInfo is COMMAND INFO [name ...]: each named command's entry, a
// null for a name no command has.
func (c *conn) commandInfo(_ *commands.Spec, args [][]byte, out []byte) []byte {
	resp3 := c.resp3.Load()
	specs := named(args[2:])
	out = resp.AppendArray(out, len(specs))
	for _, s := range specs {
		if s == nil {
			out = resp.AppendNull(out, resp3) // Redis's addReplyNull: $-1 in RESP2
			continue
		}
		out = appendCommandInfo(out, s, resp3)
	}
	return out
}

// commandDocs is COMMAND DOCS [name ...]: a map of the named commands'
// documentation, the unknown names left out.
func (c *conn) commandDocs(_ *commands.Spec, args [][]byte, out []byte) []byte {
	resp3 := c.resp3.Load()
	specs := named(args[2:])
	n := 0
	for _, s := range specs {
		if s != nil {
			n++
		}
	}
	out = resp.AppendMap(out, n, resp3)
	for _, s := range specs {
		if s != nil {
			out = resp.AppendBulkString(out, s.Name)
			out = appendCommandDocs(out, s, resp3)
		}
	}
	return out
}

// named returns the specs named in names (nil for unknown ones), or every
// command when names is empty.
func named(names [][]byte) []*commands.Spec {
	if len(names) == 0 {
		return commands.All()
	}
	specs := make([]*commands.Spec, len(names))
	for i, n := range names {
		specs[i] = commands.Lookup(n)
	}
	return specs
}

// commandGetKeys is COMMAND GETKEYS command...: the keys a full command
// names.
func (c *conn) commandGetKeys(_ *commands.Spec, args [][]byte, out []byte) []byte {
	cmd := args[2:]
	spec := commands.Lookup(cmd[0])
	switch {
	case spec == nil:
		return appendError(out, errInvalidCommand)
	case spec.CheckArity(cmd) != nil:
		return appendError(out, errInvalidArgCount)
	case !spec.HasKeys():
		return appendError(out, errNoKeys)
	}
	var keys [][]byte
	spec.Keys(cmd, func(k []byte) { keys = append(keys, k) })
	out = resp.AppendArray(out, len(keys))
	for _, k := range keys {
		out = resp.AppendBulk(out, k)
	}
	return out
}

// appendCommandInfo encodes a Redis 7 command entry of 10 fields: name,
// arity, flags, first key, last key, step, ACL categories, tips, key
// specifications and subcommands.
func appendCommandInfo(out []byte, s *commands.Spec, resp3 bool) []byte {
	out = resp.AppendArray(out, 10)
	out = resp.AppendBulkString(out, s.Name)
	out = resp.AppendInt(out, int64(s.Arity))
	out = resp.AppendSet(out, len(s.Flags), resp3)
	for _, f := range s.Flags {
		out = resp.AppendSimple(out, f)
	}
	out = resp.AppendInt(out, int64(s.FirstKey))
	out = resp.AppendInt(out, int64(s.LastKey))
	out = resp.AppendInt(out, int64(s.KeyStep))
	out = resp.AppendSet(out, len(s.Categories), resp3)
	for _, cat := range s.Categories {
		out = resp.AppendSimple(out, cat)
	}
	out = resp.AppendArray(out, 0) // tips
	if s.HasKeys() {
		out = resp.AppendArray(out, 1)
		out = appendKeySpec(out, s, resp3)
	} else {
		out = resp.AppendArray(out, 0)
	}
	out = resp.AppendArray(out, len(s.Sub))
	for _, sub := range s.Sub {
		out = appendCommandInfo(out, sub, resp3)
	}
	return out
}

// appendKeySpec encodes the one key specification of a keyed command: keys
// from index FirstKey to LastKey (relative to the end when negative).
func appendKeySpec(out []byte, s *commands.Spec, resp3 bool) []byte {
	flags := []string{"RW", "UPDATE"}
	switch s.KeyUse() {
	case commands.KeysDeleted:
		flags = []string{"RM", "DELETE"}
	case commands.KeysRead:
		flags = []string{"RO", "ACCESS"}
	}
	lastKey := int64(0)
	if s.LastKey < 0 {
		lastKey = -1
	}
	out = resp.AppendMap(out, 3, resp3)
	out = resp.AppendBulkString(out, "flags")
	out = resp.AppendSet(out, len(flags), resp3)
	for _, f := range flags {
		out = resp.AppendSimple(out, f)
	}
	out = resp.AppendBulkString(out, "begin_search")
	out = resp.AppendMap(out, 2, resp3)
	out = resp.AppendBulkString(out, "type")
	out = resp.AppendBulkString(out, "index")
	out = resp.AppendBulkString(out, "spec")
	out = resp.AppendMap(out, 1, resp3)
	out = resp.AppendBulkString(out, "index")
	out = resp.AppendInt(out, int64(s.FirstKey))
	out = resp.AppendBulkString(out, "find_keys")
	out = resp.AppendMap(out, 2, resp3)
	out = resp.AppendBulkString(out, "type")
	out = resp.AppendBulkString(out, "range")
	out = resp.AppendBulkString(out, "spec")
	out = resp.AppendMap(out, 3, resp3)
	out = resp.AppendBulkString(out, "lastkey")
	out = resp.AppendInt(out, lastKey)
	out = resp.AppendBulkString(out, "keystep")
	out = resp.AppendInt(out, int64(s.KeyStep))
	out = resp.AppendBulkString(out, "limit")
	return resp.AppendInt(out, 0)
}

// appendCommandDocs encodes COMMAND DOCS's map for one command.
func appendCommandDocs(out []byte, s *commands.Spec, resp3 bool) []byte {
	n := 5
	if len(s.Sub) > 0 {
		n++
	}
	out = resp.AppendMap(out, n, resp3)
	out = resp.AppendBulkString(out, "summary")
	out = resp.AppendBulkString(out, s.Summary)
	out = resp.AppendBulkString(out, "since")
	out = resp.AppendBulkString(out, s.Since)
	out = resp.AppendBulkString(out, "group")
	out = resp.AppendBulkString(out, s.Group)
	out = resp.AppendBulkString(out, "complexity")
	out = resp.AppendBulkString(out, s.Complexity)
	out = resp.AppendBulkString(out, "arguments")
	out = appendArgs(out, s.Args, resp3)
	if len(s.Sub) > 0 {
		out = resp.AppendBulkString(out, "subcommands")
		out = resp.AppendMap(out, len(s.Sub), resp3)
		for _, sub := range s.Sub {
			out = resp.AppendBulkString(out, sub.Name)
			out = appendCommandDocs(out, sub, resp3)
		}
	}
	return out
}

// appendArgs encodes argument docs as Redis 7's COMMAND DOCS does.
func appendArgs(out []byte, args []commands.Arg, resp3 bool) []byte {
	out = resp.AppendArray(out, len(args))
	for _, a := range args {
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		n := 3 // name, type, display_text
		if a.Token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if len(a.Args) > 0 {
			n++
		}
		out = resp.AppendMap(out, n, resp3)
		out = resp.AppendBulkString(out, "name")
		out = resp.AppendBulkString(out, a.Name)
		out = resp.AppendBulkString(out, "type")
		out = resp.AppendBulkString(out, a.Type)
		out = resp.AppendBulkString(out, "display_text")
		out = resp.AppendBulkString(out, a.Name)
		if a.Token != "" {
			out = resp.AppendBulkString(out, "token")
			out = resp.AppendBulkString(out, a.Token)
		}
		if len(flags) > 0 {
			out = resp.AppendBulkString(out, "flags")
			out = resp.AppendArray(out, len(flags))
			for _, f := range flags {
				out = resp.AppendSimple(out, f)
			}
		}
		if len(a.Args) > 0 {
			out = resp.AppendBulkString(out, "arguments")
			out = appendArgs(out, a.Args, resp3)
		}
	}
	return out
}
