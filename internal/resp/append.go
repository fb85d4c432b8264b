package resp

import (
	"slices"
	"strconv"
)

// The Append functions append one reply, or the head of an aggregate whose
// elements the caller appends next, to b and return the extended slice.
// They allocate nothing beyond growing b: a connection appends the replies
// of a whole pipeline to one buffer, which it keeps.

// appendHeader appends kind and n, a count or a length, and CRLF.
func appendHeader(b []byte, kind byte, n int64) []byte {
	if 0 <= n && n < 10 { // most counts: no conversion
		return append(b, kind, byte('0'+n), '\r', '\n')
	}
	b = append(b, kind)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// appendLine appends kind, then s with its line breaks written as spaces,
// so that the reply stays one line, then CRLF.
func appendLine(b []byte, kind byte, s string) []byte {
	b = append(b, kind)
	return appendText(b, s)
}

// appendText appends s with its line breaks written as spaces, then CRLF.
func appendText(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// AppendInt appends an integer.
func AppendInt(b []byte, v int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string.
func AppendBulk(b []byte, s []byte) []byte {
	b = appendHeader(b, '$', int64(len(s)))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends a bulk string held as a string.
func AppendBulkString(b []byte, s string) []byte {
	b = appendHeader(b, '$', int64(len(s)))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkInt appends an integer's decimal text as a bulk string, as
// Redis answers GET of a number.
func AppendBulkInt(b []byte, v int64) []byte {
	var tmp [20]byte
	return AppendBulk(b, strconv.AppendInt(tmp[:0], v, 10))
}

// AppendBulkStrings appends an array of the bulk strings ss.
func AppendBulkStrings(b []byte, ss []string) []byte {
	b = AppendArray(b, len(ss))
	for _, s := range ss {
		b = AppendBulkString(b, s)
	}
	return b
}

// AppendBulkSpace appends a bulk string of n bytes for the caller to fill:
// body is where they go, within the returned slice (a shard's backup frame
// is read straight into it).
func AppendBulkSpace(b []byte, n int) (out, body []byte) {
	b = appendHeader(b, '$', int64(n))
	start := len(b)
	b = slices.Grow(b, n+2)[:start+n] // not cleared: the caller fills it
	b = append(b, '\r', '\n')
	return b, b[start : start+n]
}

// AppendSimple appends a simple string ("+OK"); line breaks in s are
// written as spaces.
func AppendSimple(b []byte, s string) []byte { return appendLine(b, '+', s) }

// AppendOK appends the simple string OK.
func AppendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

// AppendError appends an error reply: code (the first word a client acts
// on, such as ERR, WRONGTYPE or MOVED), a space and msg; msg alone when code
// is empty, for a message that starts with its own code. Line breaks are
// written as spaces, so that the reply stays one line.
func AppendError(b []byte, code, msg string) []byte {
	b = append(b, '-')
	if code != "" {
		b = append(append(b, code...), ' ')
	}
	return appendText(b, msg)
}

// AppendNull appends a null: RESP3's, or RESP2's nil bulk string.
func AppendNull(b []byte, resp3 bool) []byte {
	if resp3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// AppendNullArray appends a null where an array was asked for: RESP3's
// null, or RESP2's null array.
func AppendNullArray(b []byte, resp3 bool) []byte {
	if resp3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

// AppendArray appends the head of an array of n elements.
func AppendArray(b []byte, n int) []byte { return appendHeader(b, '*', int64(n)) }

// AppendMap appends the head of a map of n pairs: RESP3's map, or in RESP2
// an array of 2n elements, keys and values in turn.
func AppendMap(b []byte, n int, resp3 bool) []byte {
	if resp3 {
		return appendHeader(b, '%', int64(n))
	}
	return appendHeader(b, '*', 2*int64(n))
}

// AppendSet appends the head of a set of n elements (an array in RESP2).
func AppendSet(b []byte, n int, resp3 bool) []byte {
	if resp3 {
		return appendHeader(b, '~', int64(n))
	}
	return appendHeader(b, '*', int64(n))
}

// AppendPush appends the head of a RESP3 push of n elements, an
// out-of-band message such as a client-side caching invalidation.
func AppendPush(b []byte, n int) []byte { return appendHeader(b, '>', int64(n)) }

// Encoded is a reply encoded once, appended as it is wherever it recurs:
// the field names of the decision reply, which every decision repeats.
type Encoded string

// EncodeBulk is s encoded as a bulk string.
func EncodeBulk(s string) Encoded { return Encoded(AppendBulkString(nil, s)) }

// AppendEncoded appends e.
func AppendEncoded(b []byte, e Encoded) []byte { return append(b, e...) }
