package resp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrProtocol is what every error of Parse and Reader wraps: bytes that
// are not a RESP value, or one past the bounds a reader keeps.
var ErrProtocol = errors.New("protocol error")

// maxCount bounds an aggregate's count in any reply read.
const maxCount = 1 << 30

// Parse reads the first value of s, RESP2 or RESP3, and appends it to dst
// with its elements, in pre-order. The values' strings are parts of s, not
// copies. It returns the rest of s, after the value. A RESP2 nil (a bulk
// string or an array of length -1) is read as a null.
func Parse(dst []Value, s string) ([]Value, string, error) {
	for need := int64(1); need > 0; need-- {
		end := strings.Index(s, "\r\n")
		if end < 0 {
			return dst, s, fmt.Errorf("%w: a line without CRLF", ErrProtocol)
		}
		v, n, err := parseLine(s[:end])
		if err != nil {
			return dst, s, err
		}
		s = s[end+2:]
		if n >= 0 {
			if n > len(s)-2 || s[n:n+2] != "\r\n" {
				return dst, s, fmt.Errorf("%w: a bulk string of %d bytes cut short", ErrProtocol, n)
			}
			v.Str, s = s[:n], s[n+2:]
		}
		dst = append(dst, v)
		need += v.elements()
	}
	return dst, s, nil
}

// parseLine reads one line of a reply, without its CRLF. A value the line
// holds whole is returned with n -1; a bulk string's or an error's bulk
// form's is returned with n its length, its text on the next n bytes.
func parseLine(line string) (v Value, n int, err error) {
	if line == "" {
		return v, -1, fmt.Errorf("%w: an empty line", ErrProtocol)
	}
	kind, text := line[0], line[1:]
	switch kind {
	case '+':
		return Simple(text), -1, nil
	case '-':
		return ErrorReply(text), -1, nil
	case ':':
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return v, -1, fmt.Errorf("%w: integer %q", ErrProtocol, text)
		}
		return Int(i), -1, nil
	case '_':
		return Null(), -1, nil
	case '#':
		switch text {
		case "t", "f":
			return Bool(text == "t"), -1, nil
		}
		return v, -1, fmt.Errorf("%w: boolean %q", ErrProtocol, text)
	case ',':
		return Double(text), -1, nil
	case '(':
		return Value{Kind: KindBigNumber, Str: text}, -1, nil
	case '$', '!':
		size, err := strconv.Atoi(text)
		switch {
		case err != nil || size < -1 || size > maxCount:
			return v, -1, fmt.Errorf("%w: bulk length %q", ErrProtocol, text)
		case size == -1 && kind == '$':
			return Null(), -1, nil
		case size == -1:
			return v, -1, fmt.Errorf("%w: bulk length %q", ErrProtocol, text)
		case kind == '!':
			return Value{Kind: KindError}, size, nil
		}
		return Value{Kind: KindBulk}, size, nil
	case '*', '%', '~', '>':
		count, err := strconv.ParseInt(text, 10, 64)
		switch {
		case err != nil || count < -1 || count > maxCount:
			return v, -1, fmt.Errorf("%w: count %q", ErrProtocol, text)
		case count == -1 && kind == '*':
			return Null(), -1, nil
		case count == -1:
			return v, -1, fmt.Errorf("%w: count %q", ErrProtocol, text)
		}
		return Value{Kind: aggregateKind(kind), Int: count}, -1, nil
	}
	return v, -1, fmt.Errorf("%w: unknown reply type %q", ErrProtocol, kind)
}

// aggregateKind is the kind of an aggregate's type byte.
func aggregateKind(c byte) Kind {
	switch c {
	case '%':
		return KindMap
	case '~':
		return KindSet
	case '>':
		return KindPush
	}
	return KindArray
}
