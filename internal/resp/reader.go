package resp

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Reader reads replies from a connection to a server, for rlserver's own
// clients (the backup command's). It bounds what a reply may make it hold:
// a bulk string of at most 1 GiB, an aggregate of at most a million
// elements.
type Reader struct {
	r *bufio.Reader
}

// The bounds of a Reader.
const (
	maxReadBulk  = 1 << 30
	maxReadCount = 1 << 20
)

// NewReader reads from r. The caller may read from r itself between
// replies: a reply that a bulk string's raw bytes follow, say.
func NewReader(r *bufio.Reader) *Reader { return &Reader{r: r} }

// ReadLine reads one line, without its CRLF: the head of a reply whose body
// the caller reads itself.
func (r *Reader) ReadLine() (string, error) {
	s, err := r.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(s, "\r\n") {
		return "", fmt.Errorf("%w: a line without CRLF", ErrProtocol)
	}
	return s[:len(s)-2], nil
}

// Read reads one reply and appends it to dst as Parse does. An error reply
// is a Value of KindError, not an error: the error is the connection's.
func (r *Reader) Read(dst []Value) ([]Value, error) {
	for need := int64(1); need > 0; need-- {
		line, err := r.ReadLine()
		if err != nil {
			return dst, err
		}
		v, n, err := parseLine(line)
		switch {
		case err != nil:
			return dst, err
		case n > maxReadBulk:
			return dst, fmt.Errorf("%w: a bulk string of %d bytes", ErrProtocol, n)
		case v.elements() > maxReadCount:
			return dst, fmt.Errorf("%w: an aggregate of %d elements", ErrProtocol, v.elements())
		}
		if n >= 0 {
			body := make([]byte, n+2)
			if _, err := io.ReadFull(r.r, body); err != nil {
				return dst, err
			}
			if string(body[n:]) != "\r\n" {
				return dst, fmt.Errorf("%w: a bulk string without CRLF", ErrProtocol)
			}
			v.Str = string(body[:n])
		}
		dst = append(dst, v)
		need += v.elements()
	}
	return dst, nil
}
