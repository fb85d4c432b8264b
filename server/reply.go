package server

import (
	"strconv"

	"github.com/rlserver/rlserver/engine"
)

// The append functions below encode RESP replies into a byte slice; a
// connection's replies for a whole pipeline go out in one write.

func appendInt(b []byte, v int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '\r', '\n')
}

func appendHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendArray(b []byte, n int) []byte { return appendHeader(b, '*', n) }

// appendMap starts a map of n pairs: RESP3's map, or a flat array of 2n
// elements in RESP2, as Redis sends maps to RESP2 clients.
func appendMap(b []byte, n int, resp3 bool) []byte {
	if resp3 {
		return appendHeader(b, '%', n)
	}
	return appendHeader(b, '*', 2*n)
}

// appendSet starts a set of n elements (an array in RESP2).
func appendSet(b []byte, n int, resp3 bool) []byte {
	if resp3 {
		return appendHeader(b, '~', n)
	}
	return appendHeader(b, '*', n)
}

func appendBulk(b []byte, s []byte) []byte {
	b = appendHeader(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendBulkString(b []byte, s string) []byte {
	b = appendHeader(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendBulkStrings appends ss as an array of bulk strings.
func appendBulkStrings(b []byte, ss []string) []byte {
	b = appendArray(b, len(ss))
	for _, s := range ss {
		b = appendBulkString(b, s)
	}
	return b
}

func appendBulkInt(b []byte, v int64) []byte {
	var tmp [20]byte
	return appendBulk(b, strconv.AppendInt(tmp[:0], v, 10))
}

// appendSimple appends a status reply; s must not contain CR or LF.
func appendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

func appendNull(b []byte, resp3 bool) []byte {
	if resp3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// appendDecision encodes the common RL.* reply: an array of five integers in
// RESP2, a map with their names in RESP3, followed by the extra fields of
// some commands and options (granted, delay_ms, lease_id, shadow_denied).
func appendDecision(b []byte, r *engine.Result, resp3 bool) []byte {
	d := r.Decision
	var allowed int64
	if d.Allowed {
		allowed = 1
	}
	extras := r.Extras[:r.NExtras]
	if !resp3 {
		if len(extras) == 0 {
			b = append(b, "*5\r\n"...)
		} else {
			b = appendArray(b, 5+len(extras))
		}
		b = appendInt(b, allowed)
		b = appendInt(b, d.Limit)
		b = appendInt(b, d.Remaining)
		b = appendInt(b, d.RetryAfter)
		b = appendInt(b, d.ResetAfter)
		for _, e := range extras {
			b = appendInt(b, e.Value)
		}
		return b
	}
	if len(extras) == 0 {
		b = append(b, "%5\r\n"...)
	} else {
		b = appendHeader(b, '%', 5+len(extras))
	}
	b = append(b, "$7\r\nallowed\r\n"...)
	b = appendInt(b, allowed)
	b = append(b, "$5\r\nlimit\r\n"...)
	b = appendInt(b, d.Limit)
	b = append(b, "$9\r\nremaining\r\n"...)
	b = appendInt(b, d.Remaining)
	b = append(b, "$14\r\nretry_after_ms\r\n"...)
	b = appendInt(b, d.RetryAfter)
	b = append(b, "$14\r\nreset_after_ms\r\n"...)
	b = appendInt(b, d.ResetAfter)
	for _, e := range extras {
		b = appendBulkString(b, e.Name)
		b = appendInt(b, e.Value)
	}
	return b
}

// appendThrottle encodes CL.THROTTLE's reply: five integers, an array in
// RESP2 and RESP3 alike, as redis-cell sends it.
func appendThrottle(b []byte, t engine.ThrottleReply) []byte {
	var limited int64
	if t.Limited {
		limited = 1
	}
	b = append(b, "*5\r\n"...)
	b = appendInt(b, limited)
	b = appendInt(b, t.Limit)
	b = appendInt(b, t.Remaining)
	b = appendInt(b, t.RetryAfter)
	return appendInt(b, t.ResetAfter)
}

// appendResult encodes one engine result.
func appendResult(b []byte, r *engine.Result, resp3 bool) []byte {
	switch r.Type {
	case engine.ResDecision:
		return appendDecision(b, r, resp3)
	case engine.ResThrottle:
		return appendThrottle(b, r.Throttle)
	case engine.ResInt:
		return appendInt(b, r.Int)
	case engine.ResText:
		return appendSimple(b, r.Text)
	case engine.ResBulk:
		return appendBulkString(b, r.Text)
	case engine.ResIntBulk:
		return appendBulkInt(b, r.Int)
	case engine.ResOK:
		return appendOK(b)
	case engine.ResNil:
		return appendNull(b, resp3)
	case engine.ResFields:
		b = appendMap(b, len(r.Fields), resp3)
		for _, f := range r.Fields {
			b = appendBulkString(b, f.Name)
			if f.Text != "" {
				b = appendBulkString(b, f.Text)
			} else {
				b = appendInt(b, f.Int)
			}
		}
		return b
	case engine.ResError:
		return appendError(b, r.Err)
	case engine.ResRESP:
		if resp3 {
			return append(b, r.Text...)
		}
		b, _ = appendRESP2(b, []byte(r.Text))
		return b
	}
	return appendError(b, engine.ErrUnknownOp)
}
