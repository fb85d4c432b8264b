package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawConn is a plain TCP connection to rlserver, for what a client library
// would never send (malformed or oversized frames) and for checking the exact
// bytes of replies.
type rawConn struct {
	t       testing.TB
	conn    net.Conn
	r       *bufio.Reader
	partial bool // bytes of the reply being read have arrived
}

// dialRaw connects to addr; the connection is closed on cleanup.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, cmdTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// send writes s as it is.
func (c *rawConn) send(s string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(cmdTimeout))
	if _, err := io.WriteString(c.conn, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// command encodes args as a RESP array of bulk strings.
func command(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readLine reads one CRLF-terminated line, without the CRLF.
func (c *rawConn) readLine() (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(cmdTimeout))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return line, err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return line, fmt.Errorf("line %q does not end in CRLF", line)
	}
	return line[:len(line)-2], nil
}

// readExact reads n bytes.
func (c *rawConn) readExact(n int) (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(cmdTimeout))
	buf := make([]byte, n)
	_, err := io.ReadFull(c.r, buf)
	return string(buf), err
}

// reply reads one whole reply and renders it as text: "+OK", "-ERR ...",
// ":5", "$hello" (bulk), "_" (null), "*[...]" for arrays (and sets), "%{k v
// ...}" for maps, ">[...]" for pushes. It fails the test on a read error or
// malformed reply.
func (c *rawConn) reply() string {
	c.t.Helper()
	s, err := c.tryReply()
	if err != nil {
		c.t.Fatalf("read reply: %v (got %q so far)", err, s)
	}
	return s
}

// tryReply is reply returning the error: io.EOF when the server closed the
// connection between replies, io.ErrUnexpectedEOF when it closed it in the
// middle of one.
func (c *rawConn) tryReply() (string, error) {
	s, err := c.readReply()
	if errors.Is(err, io.EOF) && (s != "" || c.partial) {
		err = io.ErrUnexpectedEOF
	}
	c.partial = false
	return s, err
}

// readReply reads one reply; partial records that some of it was read.
func (c *rawConn) readReply() (string, error) {
	line, err := c.readLine()
	if line != "" {
		c.partial = true
	}
	if err != nil {
		return line, err
	}
	if line == "" {
		return "", errors.New("empty line")
	}
	head, rest := line[0], line[1:]
	switch head {
	case '+', '-', ':', '_', '#', ',':
		return line, nil
	case '$':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return line, err
		}
		if n < 0 {
			return "_", nil
		}
		body, err := c.readExact(n + 2)
		if err != nil {
			return line, io.ErrUnexpectedEOF
		}
		return "$" + body[:n], nil
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(rest)
		if err != nil {
			return line, err
		}
		if n < 0 {
			return "_", nil
		}
		if head == '%' {
			n *= 2
		}
		parts := make([]string, n)
		for i := range parts {
			if parts[i], err = c.readReply(); err != nil {
				return line, err
			}
		}
		open, close := "*[", "]"
		switch head {
		case '%':
			open, close = "%{", "}"
		case '>': // a RESP3 push
			open = ">["
		}
		return open + strings.Join(parts, " ") + close, nil
	}
	return line, fmt.Errorf("unknown reply type %q", head)
}

// expectClosed checks that the server closes the connection (EOF or reset)
// without sending anything more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(cmdTimeout))
	buf := make([]byte, 256)
	n, err := c.r.Read(buf)
	if n > 0 {
		c.t.Fatalf("expected the connection to close, got %q", buf[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("expected the connection to close, it stayed open for %v", cmdTimeout)
	}
	if err == nil {
		c.t.Fatalf("expected the connection to close")
	}
}
