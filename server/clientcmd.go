package server

import (
	"bytes"
	"fmt"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// validName reports whether a client name is acceptable: printable ASCII
// without spaces, as Redis requires.
func validName(name []byte) bool {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// clientSetName is CLIENT SETNAME name.
func (c *conn) clientSetName(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if !validName(args[2]) {
		return appendError(out, errBadName)
	}
	c.setName(string(args[2]))
	return resp.AppendOK(out)
}

// clientGetName is CLIENT GETNAME.
func (c *conn) clientGetName(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	if name, _, _ := c.names(); name != "" {
		return resp.AppendBulkString(out, name)
	}
	return resp.AppendNull(out, c.resp3.Load())
}

// clientID is CLIENT ID.
func (c *conn) clientID(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return resp.AppendInt(out, c.id)
}

// clientInfo is CLIENT INFO: the connection's CLIENT LIST line.
func (c *conn) clientInfo(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return resp.AppendBulkString(out, c.describe(time.Now()))
}

// clientTracking is CLIENT TRACKING ON|OFF [options] (tracking.go).
func (c *conn) clientTracking(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if err := c.trackingCommand(args); err != nil {
		return appendError(out, err)
	}
	return resp.AppendOK(out)
}

// clientCaching is CLIENT CACHING YES|NO (tracking.go).
func (c *conn) clientCaching(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if err := c.cachingCommand(args[2]); err != nil {
		return appendError(out, err)
	}
	return resp.AppendOK(out)
}

// clientGetRedir is CLIENT GETREDIR. Tracking never redirects here: 0
// while it is on, -1 while off.
func (c *conn) clientGetRedir(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	if c.tracker != nil {
		return resp.AppendInt(out, 0)
	}
	return resp.AppendInt(out, -1)
}

// clientTrackingInfo is CLIENT TRACKINGINFO (tracking.go).
func (c *conn) clientTrackingInfo(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	return c.trackingInfo(out)
}

// clientAccepted is CLIENT NO-EVICT and NO-TOUCH ON|OFF: accepted, and
// nothing to do (rlserver evicts no clients, and its keys have no access
// time).
func (c *conn) clientAccepted(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if !commands.EqualFold(args[2], "on") && !commands.EqualFold(args[2], "off") {
		return appendError(out, commands.ErrSyntax)
	}
	return resp.AppendOK(out)
}

// clientSetInfo is CLIENT SETINFO LIB-NAME|LIB-VER value. As in Redis,
// the option is checked first, and the value obeys the rules of client
// names.
func (c *conn) clientSetInfo(_ *commands.Spec, args [][]byte, out []byte) []byte {
	var field *string
	switch {
	case commands.EqualFold(args[2], "lib-name"):
		field = &c.libName
	case commands.EqualFold(args[2], "lib-ver"):
		field = &c.libVer
	default:
		return appendError(out, fmt.Errorf("ERR Unrecognized option '%s'", args[2]))
	}
	if !validName(args[3]) {
		return appendError(out, fmt.Errorf("ERR %s cannot contain spaces, newlines or special characters.", args[2]))
	}
	c.mu.Lock()
	*field = string(args[3])
	c.mu.Unlock()
	return resp.AppendOK(out)
}

// clientList is CLIENT LIST [TYPE normal|master|replica|pubsub].
func (c *conn) clientList(_ *commands.Spec, args [][]byte, out []byte) []byte {
	normal := true
	if len(args) == 4 && commands.EqualFold(args[2], "type") {
		switch {
		case commands.EqualFold(args[3], "normal"):
		case commands.EqualFold(args[3], "master"), commands.EqualFold(args[3], "replica"), commands.EqualFold(args[3], "slave"), commands.EqualFold(args[3], "pubsub"):
			normal = false
		default:
			return appendError(out, fmt.Errorf("ERR Unknown client type '%s'", args[3]))
		}
	} else if len(args) != 2 {
		return appendError(out, commands.ErrSyntax)
	}
	var b bytes.Buffer
	if normal {
		now := time.Now()
		c.srv.eachClient(func(other *conn) { b.WriteString(other.describe(now)) })
	}
	return resp.AppendBulk(out, b.Bytes())
}

// describe is the connection's CLIENT LIST line.
func (c *conn) describe(now time.Time) string {
	name, libName, libVer := c.names()
	c.mu.Lock()
	userName := c.userName
	c.mu.Unlock()
	cmd := "NULL"
	if spec := c.lastSpec.Load(); spec != nil {
		cmd = spec.Name
	}
	resp := 2
	if c.resp3.Load() {
		resp = 3
	}
	// Tracking shows as Redis shows it: flag t, and redir=0 (no redirection).
	flags, redir := "N", -1
	if c.trackingOn.Load() {
		flags, redir = "t", 0
	}
	// The transaction belongs to the connection's own goroutine; other
	// connections cannot read it, so multi= is always -1.
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=-1 "+
		"qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s "+
		"user=%s redir=%d resp=%d lib-name=%s lib-ver=%s\n",
		c.id, c.addr, c.laddr, name, int(now.Sub(c.created).Seconds()), (now.UnixMilli()-c.lastCmd.Load())/1000,
		flags, cmd, userName, redir, resp, libName, libVer)
}
