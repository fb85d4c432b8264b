package resp

import "math"

// AppendValues appends the values vs, each with its elements, as RESP3
// when resp3 is set and otherwise as Redis writes RESP3's types for a RESP2
// client (see the package's documentation). An aggregate whose elements
// vs lacks is completed with nulls, so that what is written is always
// whole.
//
// The values are in pre-order, so each is written in turn, an aggregate
// as its head: nothing is walked twice, and nothing recurses.
func AppendValues(b []byte, vs []Value, resp3 bool) []byte {
	owed := int64(0) // the elements the aggregates begun still expect
	for i := range vs {
		v := &vs[i]
		if owed > 0 {
			owed--
		}
		switch v.Kind {
		case KindSimple:
			b = appendLine(b, '+', v.Str)
		case KindError:
			b = appendLine(b, '-', v.Str)
		case KindInt:
			b = AppendInt(b, v.Int)
		case KindBulk: // AppendBulkString, its header written here when short
			if n := len(v.Str); n < 10 {
				b = append(b, '$', byte('0'+n), '\r', '\n')
			} else {
				b = appendHeader(b, '$', int64(n))
			}
			b = append(b, v.Str...)
			b = append(b, '\r', '\n')
		case KindBool:
			b = appendBool(b, v.Int != 0, resp3)
		case KindDouble:
			b = appendNumberText(b, ',', v.Str, resp3)
		case KindBigNumber:
			b = appendNumberText(b, '(', v.Str, resp3)
		case KindArray:
			b = appendHeader(b, '*', max(v.Int, 0))
		case KindMap:
			b = AppendMap(b, int(max(v.Int, 0)), resp3)
		case KindSet:
			b = AppendSet(b, int(max(v.Int, 0)), resp3)
		case KindPush:
			if resp3 {
				b = AppendPush(b, int(max(v.Int, 0)))
			} else {
				b = appendHeader(b, '*', max(v.Int, 0))
			}
		default: // a null, or no kind of this package's: a null keeps the reply whole
			b = AppendNull(b, resp3)
		}
		owed += v.elements()
	}
	for ; owed > 0; owed-- {
		b = AppendNull(b, resp3)
	}
	return b
}

// appendBool appends a boolean: RESP3's, or in RESP2 the integer 1 or 0.
func appendBool(b []byte, v, resp3 bool) []byte {
	switch {
	case resp3 && v:
		return append(b, "#t\r\n"...)
	case resp3:
		return append(b, "#f\r\n"...)
	case v:
		return append(b, ":1\r\n"...)
	}
	return append(b, ":0\r\n"...)
}

// appendNumberText appends a double or a big number (kind ',' or '('),
// written as its text: RESP3's line, or in RESP2 a bulk string of it.
func appendNumberText(b []byte, kind byte, text string, resp3 bool) []byte {
	if resp3 {
		return appendLine(b, kind, text)
	}
	// Its text as a bulk string; the line breaks written as spaces keep
	// its length.
	b = appendHeader(b, '$', int64(len(text)))
	return appendText(b, text)
}

// EncodedLen is the length of what AppendValues writes for vs, whose
// aggregates are whole.
func EncodedLen(vs []Value, resp3 bool) int {
	n := 0
	for _, v := range vs {
		n += encodedLen(v, resp3)
	}
	return n
}

// encodedLen is the length of what AppendValues writes for v, without its
// elements.
func encodedLen(v Value, resp3 bool) int {
	const crlf = 2
	switch v.Kind {
	case KindNull:
		if resp3 {
			return 3 // _\r\n
		}
		return 5 // $-1\r\n
	case KindSimple, KindError:
		return 1 + len(v.Str) + crlf
	case KindInt:
		return 1 + digits(v.Int) + crlf
	case KindBulk:
		return 1 + digits(int64(len(v.Str))) + crlf + len(v.Str) + crlf
	case KindBool:
		return 4 // #t\r\n, :1\r\n
	case KindDouble, KindBigNumber:
		if resp3 {
			return 1 + len(v.Str) + crlf
		}
		return 1 + digits(int64(len(v.Str))) + crlf + len(v.Str) + crlf
	case KindArray, KindSet, KindPush:
		return 1 + digits(max(v.Int, 0)) + crlf
	case KindMap:
		if resp3 {
			return 1 + digits(max(v.Int, 0)) + crlf
		}
		return 1 + digits(2*max(v.Int, 0)) + crlf
	}
	return encodedLen(Null(), resp3)
}

// digits is the length of v in decimal, its sign included.
func digits(v int64) int {
	n := 1
	if v < 0 {
		n++
		if v == math.MinInt64 {
			return 20
		}
		v = -v
	}
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}
