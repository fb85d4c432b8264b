package engine

import "strconv"

// Replies that are not one value (HMGET's, LRANGE's, HGETALL's, a script's)
// are written once, here, in RESP3: a Result of type ResRESP carries them
// in Text. A script's reply can be any RESP3 value, so this is the one form
// every layer can hold; the server passes it on to a RESP3 connection as it
// is and rewrites it for a RESP2 one (maps as flat arrays, nulls as nil
// bulk strings, booleans as 1 and nil, doubles as bulk strings), as Redis
// does. The engine writes it deterministically, like every other result.

// The RESP3 writers.

// AppendRESPHeader appends a header: kind ('*', '%', '$' ...) and n.
func AppendRESPHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendRESPBulk appends a bulk string.
func AppendRESPBulk(b []byte, s []byte) []byte {
	b = AppendRESPHeader(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendRESPBulkString appends a bulk string held as a string.
func appendRESPBulkString(b []byte, s string) []byte {
	b = AppendRESPHeader(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendRESPInt appends an integer.
func AppendRESPInt(b []byte, v int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '\r', '\n')
}

// AppendRESPNull appends RESP3's null.
func AppendRESPNull(b []byte) []byte { return append(b, "_\r\n"...) }

// AppendRESPLine appends a simple string ('+'), an error ('-'), a double
// (',') or a big number ('('): kind and s, whose line breaks are replaced
// so that the reply stays one line.
func AppendRESPLine(b []byte, kind byte, s string) []byte {
	b = append(b, kind)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// AppendRESPBool appends RESP3's boolean.
func AppendRESPBool(b []byte, v bool) []byte {
	if v {
		return append(b, "#t\r\n"...)
	}
	return append(b, "#f\r\n"...)
}

// maxKeptScratch is the largest scratch a shard keeps for replies between
// commands: a rare large reply is not held for the life of the shard.
const maxKeptScratch = 64 << 10

// respText is the reply b, written in the shard's respScratch, as a Result's
// Text: copied once, the scratch kept for the next reply.
func (s *Shard) respText(b []byte) string {
	if cap(b) <= maxKeptScratch {
		s.respScratch = b[:0]
	}
	return string(b)
}
