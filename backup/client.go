package backup

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/internal/resp"
)

// Source fetches shards from a running rlserver over the Redis protocol,
// authenticated like any client: INFO for the shard count, then RL.BACKUP
// for each shard, from the node that leads it (MOVED says which).
type Source struct {
	// User and Password authenticate every connection (AUTH), when
	// Password is set; User "" is the default user.
	User, Password string
	// TLS, when set, connects with TLS.
	TLS *tls.Config
	// Timeout bounds dialling and each reply's wait; a shard's frame may
	// take longer to arrive, as long as bytes keep coming.
	Timeout time.Duration

	conns map[string]*respConn
}

// ErrRedirects reports a shard whose leader kept moving.
var ErrRedirects = errors.New("too many redirects")

// Close closes the connections.
func (s *Source) Close() {
	for _, c := range s.conns {
		c.nc.Close()
	}
	s.conns = nil
}

// Shards returns how many shards the node at addr has (INFO's rl_shards).
func (s *Source) Shards(addr string) (int, error) {
	c, err := s.conn(addr)
	if err != nil {
		return 0, err
	}
	info, err := c.do("INFO", "ratelimit")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info[0].Str, "\r\n") {
		if v, ok := strings.CutPrefix(line, "rl_shards:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("%s: INFO has no rl_shards: is it an rlserver?", addr)
}

// Fetch asks for shard's state, starting at addr and following MOVED to its
// leader, and calls write with its section and a reader of its frame (valid
// until write returns), which write must read whole. A TRYAGAIN (an
// election) is retried for up to retryFor.
func (s *Source) Fetch(addr string, shard int, retryFor time.Duration, write func(Shard, io.Reader) error) error {
	deadline := time.Now().Add(retryFor)
	for redirects := 0; redirects < 8; {
		c, err := s.conn(addr)
		if err != nil {
			return err
		}
		sec, err := c.backupHead(shard)
		var re replyError
		switch {
		case errors.As(err, &re) && strings.HasPrefix(string(re), "MOVED "):
			f := strings.Fields(string(re))
			if len(f) != 3 {
				return err
			}
			addr = f[2]
			redirects++
			continue
		case errors.As(err, &re) && strings.HasPrefix(string(re), "TRYAGAIN") && time.Now().Before(deadline):
			time.Sleep(200 * time.Millisecond) // an election: wait for a leader
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", addr, err)
		}
		// The frame follows on the connection; the deadline moves with the
		// bytes, so only a stalled transfer times out.
		frame := &deadlineReader{c: c, left: sec.Size, timeout: s.timeout()}
		if err := write(sec, frame); err != nil {
			s.drop(addr)
			return err
		}
		if frame.left != 0 {
			s.drop(addr)
			return fmt.Errorf("%s: shard %d: the frame was not read whole", addr, shard)
		}
		if crlf, err := c.line(); err != nil || crlf != "" {
			s.drop(addr)
			return fmt.Errorf("%s: shard %d: no end to the frame: %v", addr, shard, err)
		}
		return nil
	}
	return fmt.Errorf("shard %d: %w", shard, ErrRedirects)
}

func (s *Source) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 30 * time.Second
}

// conn returns the connection to addr, dialling and authenticating it on
// first use.
func (s *Source) conn(addr string) (*respConn, error) {
	if c := s.conns[addr]; c != nil {
		return c, nil
	}
	d := &net.Dialer{Timeout: s.timeout()}
	var nc net.Conn
	var err error
	if s.TLS != nil {
		nc, err = tls.DialWithDialer(d, "tcp", addr, s.TLS)
	} else {
		nc, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(nc, 256<<10)
	c := &respConn{nc: nc, r: r, replies: resp.NewReader(r), timeout: s.timeout()}
	if s.Password != "" {
		args := []string{"AUTH", s.Password}
		if s.User != "" {
			args = []string{"AUTH", s.User, s.Password}
		}
		if _, err := c.do(args...); err != nil {
			nc.Close()
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
	}
	if s.conns == nil {
		s.conns = map[string]*respConn{}
	}
	s.conns[addr] = c
	return c, nil
}

// drop closes the connection to addr: it is mid-reply.
func (s *Source) drop(addr string) {
	if c := s.conns[addr]; c != nil {
		c.nc.Close()
		delete(s.conns, addr)
	}
}

// respConn is one connection speaking RESP2.
type respConn struct {
	nc      net.Conn
	r       *bufio.Reader // a frame's bytes are read from it directly
	replies *resp.Reader  // over r
	out     []byte        // the command being sent
	timeout time.Duration
}

// replyError is an error reply, its text as sent ("MOVED 0 host:port").
type replyError string

func (e replyError) Error() string { return string(e) }

// do sends a command and reads its reply, an error reply as a replyError.
func (c *respConn) do(args ...string) ([]resp.Value, error) {
	if err := c.send(args...); err != nil {
		return nil, err
	}
	return c.value()
}

func (c *respConn) send(args ...string) error {
	c.out = resp.AppendCommand(c.out[:0], args...)
	c.nc.SetDeadline(time.Now().Add(c.timeout))
	_, err := c.nc.Write(c.out)
	return err
}

// line reads one CRLF-terminated line, without it.
func (c *respConn) line() (string, error) { return c.replies.ReadLine() }

// value reads one reply, an error reply as a replyError.
func (c *respConn) value() ([]resp.Value, error) {
	v, err := c.replies.Read(nil)
	if err == nil && v[0].Kind == resp.KindError {
		return nil, replyError(v[0].Str)
	}
	return v, err
}

// backupHead sends RL.BACKUP shard and reads its reply up to the frame's
// bytes, which follow on the connection.
func (c *respConn) backupHead(shard int) (Shard, error) {
	if err := c.send("RL.BACKUP", strconv.Itoa(shard)); err != nil {
		return Shard{}, err
	}
	l, err := c.line()
	switch {
	case err != nil:
		return Shard{}, err
	case strings.HasPrefix(l, "-"):
		return Shard{}, replyError(l[1:])
	case l != "*7":
		return Shard{}, fmt.Errorf("RL.BACKUP: unexpected reply %q", l)
	}
	var v [6]int64
	for i := range v {
		x, err := c.value()
		if err != nil || x[0].Kind != resp.KindInt {
			return Shard{}, fmt.Errorf("RL.BACKUP: unexpected reply (%v)", err)
		}
		v[i] = x[0].Int
	}
	size, err := c.line()
	if err != nil || size != "$"+strconv.FormatInt(v[5], 10) {
		return Shard{}, fmt.Errorf("RL.BACKUP: the frame's length %q is not %d", size, v[5])
	}
	if int(v[0]) != shard {
		return Shard{}, fmt.Errorf("RL.BACKUP %d answered shard %d", shard, v[0])
	}
	return Shard{Shard: shard, Index: uint64(v[1]), Term: uint64(v[2]), TimeMs: v[3], TakenMs: v[4], Size: v[5]}, nil
}

// deadlineReader reads a frame's bytes, moving the connection's deadline on
// with every read.
type deadlineReader struct {
	c       *respConn
	left    int64
	timeout time.Duration
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if d.left == 0 {
		return 0, io.EOF
	}
	d.c.nc.SetReadDeadline(time.Now().Add(d.timeout))
	n, err := d.c.r.Read(p[:min(int64(len(p)), d.left)])
	d.left -= int64(n)
	if errors.Is(err, io.EOF) && d.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
