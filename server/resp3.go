package server

// Replies that are not one value come from the shards in RESP3 (see
// engine/resp.go); a RESP2 connection gets them rewritten as Redis writes
// RESP3's types for RESP2 clients: a map as a flat array of keys and
// values, a set as an array, a null as a nil bulk string, a boolean as 1 or
// 0, a double and a big
// number as bulk strings.

// appendRESP2 appends the first RESP3 value of v, rewritten for RESP2, and
// returns the rest of v. v comes from a shard, so it is well formed; a
// truncated one ends the rewrite.
func appendRESP2(b, v []byte) ([]byte, []byte) {
	if len(v) < 3 {
		return b, nil
	}
	end := 1
	for end < len(v) && v[end] != '\r' {
		end++
	}
	line, rest := v[1:end], v[min(end+2, len(v)):]
	switch kind := v[0]; kind {
	case '$':
		n := atoiLine(line)
		if n < 0 || n+2 > len(rest) {
			return append(b, "$-1\r\n"...), rest
		}
		return append(b, v[:end+2+n+2]...), rest[n+2:]
	case '*', '~', '%':
		n := atoiLine(line)
		count := n
		if kind == '%' {
			count = 2 * n
		}
		b = appendArray(b, count)
		for range count {
			b, rest = appendRESP2(b, rest)
		}
		return b, rest
	case '_':
		return append(b, "$-1\r\n"...), rest
	case '#':
		if len(line) == 1 && line[0] == 't' {
			return append(b, ":1\r\n"...), rest
		}
		return append(b, ":0\r\n"...), rest
	case ',', '(':
		return appendBulk(b, line), rest
	}
	return append(b, v[:end+2]...), rest // '+', '-', ':' are the same in RESP2
}

// atoiLine reads a RESP length or count.
func atoiLine(s []byte) int {
	n, neg := 0, false
	for i, c := range s {
		if i == 0 && c == '-' {
			neg = true
			continue
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n
	}
	return n
}
