package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
	"github.com/rlserver/rlserver/server/acl"
)

// The ACL command reads the users (package acl); it never changes them. The
// users come from one file read at start-up, so every node of a cluster,
// given the same file, enforces the same rules, and no command can grant
// itself more. The command stays here, with the reply encoders it needs.

// errACLReadOnly answers the ACL subcommands that would change the users.
func errACLReadOnly(sub string) error {
	return fmt.Errorf("ERR ACL %s is not supported: rlserver reads its users from --aclfile (or --requirepass) at start-up; edit the file and restart", strings.ToUpper(sub))
}

// errGenpassBits is Redis's text for a bad ACL GENPASS argument.
var errGenpassBits = errors.New("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")

// aclWhoami is ACL WHOAMI: the user the connection acts as.
func (c *conn) aclWhoami(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return resp.AppendBulkString(out, c.user.Name())
}

// aclUsers is ACL USERS: every user's name.
func (c *conn) aclUsers(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return resp.AppendBulkStrings(out, c.srv.cfg.Users.Names())
}

// aclList is ACL LIST: every user's rules, as the aclfile would say them.
func (c *conn) aclList(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	users := c.srv.cfg.Users
	names := users.Names()
	out = resp.AppendArray(out, len(names))
	for _, n := range names {
		out = resp.AppendBulkString(out, users.Lookup(n).String())
	}
	return out
}

// aclGetUser is ACL GETUSER name.
func (c *conn) aclGetUser(_ *commands.Spec, args [][]byte, out []byte) []byte {
	u := c.srv.cfg.Users.Lookup(string(args[2]))
	if u == nil {
		return resp.AppendNull(out, c.resp3.Load())
	}
	return appendUser(out, u.Describe(), c.resp3.Load())
}

// aclReadOnly answers the subcommands that would change the users.
func (c *conn) aclReadOnly(sub *commands.Spec, _ [][]byte, out []byte) []byte {
	return appendError(out, errACLReadOnly(sub.Name[len("acl|"):]))
}

// appendUser is ACL GETUSER's map: flags, passwords (their SHA-256),
// commands, keys, channels, and no selectors.
func appendUser(out []byte, d acl.Description, resp3 bool) []byte {
	out = resp.AppendMap(out, 6, resp3)
	out = resp.AppendBulkString(out, "flags")
	out = resp.AppendSet(out, len(d.Flags), resp3)
	for _, f := range d.Flags {
		out = resp.AppendBulkString(out, f)
	}
	out = resp.AppendBulkString(out, "passwords")
	out = resp.AppendBulkStrings(out, d.Passwords)
	out = resp.AppendBulkString(out, "commands")
	out = resp.AppendBulkString(out, d.Commands)
	out = resp.AppendBulkString(out, "keys")
	out = resp.AppendBulkString(out, d.Keys)
	out = resp.AppendBulkString(out, "channels")
	out = resp.AppendBulkString(out, d.Channels)
	out = resp.AppendBulkString(out, "selectors")
	return resp.AppendArray(out, 0)
}

// aclCat is ACL CAT [category]: the categories, or the commands and
// subcommands ("config|get") in one.
func (c *conn) aclCat(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if len(args) == 2 {
		cats := commands.ACLCategories()
		return resp.AppendBulkStrings(out, cats)
	}
	if len(args) > 3 {
		return appendError(out, commands.SubcommandSyntax("acl", args[1]))
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
	return resp.AppendBulkStrings(out, names)
}

// aclGenpass is ACL GENPASS [bits]: random hex digits from crypto/rand,
// 256 bits unless told otherwise.
func (c *conn) aclGenpass(_ *commands.Spec, args [][]byte, out []byte) []byte {
	bits := int64(256)
	if len(args) > 3 {
		return appendError(out, commands.SubcommandSyntax("acl", args[1]))
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
	return resp.AppendBulkString(out, hex.EncodeToString(b)[:(bits+3)/4])
}
