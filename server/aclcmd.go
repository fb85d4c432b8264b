package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/commands"
)

// The ACL command reads the users; it never changes them. The users come
// from one file read at start-up, so every node of a cluster, given the
// same file, enforces the same rules, and no command can grant itself more.

// errACLReadOnly answers the ACL subcommands that would change the users.
func errACLReadOnly(sub string) error {
	return fmt.Errorf("ERR ACL %s is not supported: rlserver reads its users from --aclfile (or --requirepass) at start-up; edit the file and restart", strings.ToUpper(sub))
}

// errGenpassBits is Redis's text for a bad ACL GENPASS argument.
var errGenpassBits = errors.New("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")

// aclCommand is ACL and its subcommands.
func (c *client) aclCommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	sub, err := c.subcommand(spec, args)
	if err != nil {
		return appendError(out, err)
	}
	acl := c.srv.acl
	switch sub.Name {
	case "acl|whoami":
		return appendBulkString(out, c.user.name)
	case "acl|users":
		out = appendArray(out, len(acl.names))
		for _, n := range acl.names {
			out = appendBulkString(out, n)
		}
		return out
	case "acl|list":
		out = appendArray(out, len(acl.names))
		for _, n := range acl.names {
			out = appendBulkString(out, acl.users[n].describe())
		}
		return out
	case "acl|getuser":
		u := acl.users[string(args[2])]
		if u == nil {
			return appendNull(out, c.resp3.Load())
		}
		return c.appendUser(out, u)
	case "acl|cat":
		return c.aclCat(args, out)
	case "acl|genpass":
		return genpass(args, out)
	case "acl|setuser", "acl|deluser", "acl|load", "acl|save":
		return appendError(out, errACLReadOnly(sub.Name[len("acl|"):]))
	}
	return appendHelp(out, spec)
}

// appendUser is ACL GETUSER's map: flags, passwords (their SHA-256),
// commands, keys, channels, and no selectors.
func (c *client) appendUser(out []byte, u *User) []byte {
	resp3 := c.resp3.Load()
	out = appendMap(out, 6, resp3)
	out = appendBulkString(out, "flags")
	flags := []string{"off"}
	if u.enabled {
		flags[0] = "on"
	}
	if u.nopass {
		flags = append(flags, "nopass")
	}
	out = appendSet(out, len(flags), resp3)
	for _, f := range flags {
		out = appendBulkString(out, f)
	}
	out = appendBulkString(out, "passwords")
	out = appendArray(out, len(u.hashes))
	for _, h := range u.hashes {
		out = appendBulkString(out, hex.EncodeToString(h[:]))
	}
	out = appendBulkString(out, "commands")
	out = appendBulkString(out, u.describeCommands())
	out = appendBulkString(out, "keys")
	keys := u.describeKeys()
	if keys == "resetkeys" {
		keys = ""
	}
	out = appendBulkString(out, keys)
	out = appendBulkString(out, "channels")
	if u.allChannels {
		out = appendBulkString(out, "&*")
	} else {
		out = appendBulkString(out, "")
	}
	out = appendBulkString(out, "selectors")
	return appendArray(out, 0)
}

// aclCat is ACL CAT [category]: the categories, or the commands and
// subcommands ("config|get") in one.
func (c *client) aclCat(args [][]byte, out []byte) []byte {
	if len(args) == 2 {
		cats := commands.ACLCategories()
		out = appendArray(out, len(cats))
		for _, cat := range cats {
			out = appendBulkString(out, cat)
		}
		return out
	}
	if len(args) > 3 {
		return appendError(out, commands.WrongArity("acl|cat"))
	}
	cat := string(args[2])
	if !commands.IsACLCategory(cat) {
		return appendError(out, fmt.Errorf("ERR Unknown category '%.128s'", cat))
	}
	var names []string
	for _, s := range commands.Specs() {
		if s.InCategory(cat) {
			names = append(names, s.Name)
		}
	}
	out = appendArray(out, len(names))
	for _, n := range names {
		out = appendBulkString(out, n)
	}
	return out
}

// genpass is ACL GENPASS [bits]: random hex digits from crypto/rand, 256
// bits unless told otherwise.
func genpass(args [][]byte, out []byte) []byte {
	bits := int64(256)
	if len(args) > 3 {
		return appendError(out, commands.WrongArity("acl|genpass"))
	}
	if len(args) == 3 {
		v, ok := commands.ParseInt(args[2])
		if !ok {
			return appendError(out, commands.ErrNotInteger)
		}
		bits = v
	}
	if bits <= 0 || bits > 4096 {
		return appendError(out, errGenpassBits)
	}
	b := make([]byte, (bits+7)/8)
	rand.Read(b)
	return appendBulkString(out, hex.EncodeToString(b)[:(bits+3)/4])
}
