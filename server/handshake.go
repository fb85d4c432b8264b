package server

import (
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// The commands a client sends to set its connection up: HELLO (protocol
// version, credentials, name), AUTH, and SELECT (one database here).

// Redis's texts for authentication and handshake errors.
var (
	errNoAuth     = errors.New("NOAUTH Authentication required.")
	errNoPassword = errors.New("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	errNoProto    = errors.New("NOPROTO unsupported protocol version")
	errProtoInt   = errors.New("ERR Protocol version is not an integer or out of range")
	errHelloAuth  = errors.New("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	errBadName    = errors.New("ERR Client names cannot contain spaces, newlines or special characters.")
	errDBRange    = errors.New("ERR DB index is out of range")
)

// authenticate checks a user and password (the default user when user is
// nil) against the users, and on success makes the connection act as that
// user. A failure leaves it as it was, as in Redis.
func (c *conn) authenticate(user, pass []byte) error {
	if user == nil {
		user = []byte("default")
	}
	u, err := c.srv.cfg.Users.Authenticate(user, pass)
	if err != nil {
		return err
	}
	c.setUser(u)
	c.authed = true
	return nil
}

// auth is AUTH [username] password.
func (c *conn) auth(args [][]byte, out []byte) []byte {
	var err error
	switch len(args) {
	case 2:
		// Redis refuses only this form when there is no password to check.
		if c.srv.cfg.Users.Default().NoPass() {
			return appendError(out, errNoPassword)
		}
		err = c.authenticate(nil, args[1])
	case 3:
		err = c.authenticate(args[1], args[2])
	default:
		err = commands.ErrSyntax
	}
	if err != nil {
		return appendError(out, err)
	}
	return resp.AppendOK(out)
}

// hello is HELLO [protover [AUTH username password] [SETNAME clientname]].
func (c *conn) hello(args [][]byte, out []byte) []byte {
	resp3 := c.resp3.Load()
	if len(args) > 1 {
		v, ok := commands.ParseInt(args[1])
		if !ok {
			return appendError(out, errProtoInt)
		}
		if v != 2 && v != 3 {
			return appendError(out, errNoProto)
		}
		resp3 = v == 3
	}
	var user, pass, name []byte
	for i := 2; i < len(args); i++ {
		switch {
		case commands.EqualFold(args[i], "auth") && i+2 < len(args):
			user, pass = args[i+1], args[i+2]
			i += 2
		case commands.EqualFold(args[i], "setname") && i+1 < len(args):
			name = args[i+1]
			i++
		default:
			return appendError(out, fmt.Errorf("ERR Syntax error in HELLO option '%s'", args[i]))
		}
	}
	if pass != nil {
		if err := c.authenticate(user, pass); err != nil {
			return appendError(out, err)
		}
	} else if !c.authed {
		return appendError(out, errHelloAuth)
	}
	if name != nil {
		if !validName(name) {
			return appendError(out, errBadName)
		}
		c.setName(string(name))
	}
	c.resp3.Store(resp3)
	proto := int64(2)
	if resp3 {
		proto = 3
	}
	out = resp.AppendMap(out, 7, resp3)
	out = resp.AppendBulkString(out, "server")
	out = resp.AppendBulkString(out, "rlserver")
	out = resp.AppendBulkString(out, "version")
	out = resp.AppendBulkString(out, RedisVersion)
	out = resp.AppendBulkString(out, "proto")
	out = resp.AppendInt(out, proto)
	out = resp.AppendBulkString(out, "id")
	out = resp.AppendInt(out, c.id)
	out = resp.AppendBulkString(out, "mode")
	out = resp.AppendBulkString(out, c.srv.mode())
	out = resp.AppendBulkString(out, "role")
	out = resp.AppendBulkString(out, "master")
	out = resp.AppendBulkString(out, "modules")
	return resp.AppendArray(out, 0)
}

// selectDB is SELECT: rlserver has one database, 0.
func (c *conn) selectDB(args [][]byte, out []byte) []byte {
	v, ok := commands.ParseInt(args[1])
	if !ok {
		return appendError(out, commands.ErrNotInteger)
	}
	if v != 0 {
		return appendError(out, errDBRange)
	}
	return resp.AppendOK(out)
}
