package server

import (
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// The replies to the engine's results. Every RL.* decision answers the same
// way, so that one client helper serves every algorithm: in RESP2 an array
// of five integers, in RESP3 a map with their names (docs/commands.md).

// The names of a decision's fields in RESP3, which every decision repeats,
// encoded once as constants: the compiler then copies each in place, where
// a variable's bytes cost a call (11% of the RESP3 decision reply,
// docs/performance.md, "One RESP package"). TestDecisionKeysAreBulkStrings
// checks them against resp.EncodeBulk.
const (
	keyAllowed    resp.Encoded = "$7\r\nallowed\r\n"
	keyLimit      resp.Encoded = "$5\r\nlimit\r\n"
	keyRemaining  resp.Encoded = "$9\r\nremaining\r\n"
	keyRetryAfter resp.Encoded = "$14\r\nretry_after_ms\r\n"
	keyResetAfter resp.Encoded = "$14\r\nreset_after_ms\r\n"
)

// appendDecision encodes the common RL.* reply: an array of five integers in
// RESP2, a map with their names in RESP3, followed by the extra fields of
// some commands and options (granted, delay_ms, lease_id, shadow_denied).
func appendDecision(b []byte, r *engine.Result, resp3 bool) []byte {
	extras := r.Extras[:r.NExtras]
	b = appendDecisionHead(b, r.Decision, len(extras), resp3)
	return appendExtras(b, extras, resp3)
}

// appendDecisionHead encodes the head of a decision reply with extra more
// fields: the array's or map's length, then the five common fields.
func appendDecisionHead(b []byte, d engine.Decision, extra int, resp3 bool) []byte {
	var allowed int64
	if d.Allowed {
		allowed = 1
	}
	if !resp3 {
		b = resp.AppendArray(b, 5+extra)
		b = resp.AppendInt(b, allowed)
		b = resp.AppendInt(b, d.Limit)
		b = resp.AppendInt(b, d.Remaining)
		b = resp.AppendInt(b, d.RetryAfter)
		return resp.AppendInt(b, d.ResetAfter)
	}
	b = resp.AppendMap(b, 5+extra, true)
	b = resp.AppendInt(resp.AppendEncoded(b, keyAllowed), allowed)
	b = resp.AppendInt(resp.AppendEncoded(b, keyLimit), d.Limit)
	b = resp.AppendInt(resp.AppendEncoded(b, keyRemaining), d.Remaining)
	b = resp.AppendInt(resp.AppendEncoded(b, keyRetryAfter), d.RetryAfter)
	return resp.AppendInt(resp.AppendEncoded(b, keyResetAfter), d.ResetAfter)
}

// appendExtras encodes a decision's extra fields: integers in RESP2, named
// in RESP3.
func appendExtras(b []byte, extras []engine.Extra, resp3 bool) []byte {
	for _, e := range extras {
		if resp3 {
			b = resp.AppendBulkString(b, e.Name)
		}
		b = resp.AppendInt(b, e.Value)
	}
	return b
}

// appendReservation encodes RL.RESERVE's reply: the decision and its
// extra fields, the last of which, the reservation's seq, becomes its id,
// a bulk string (a null when refused), named reservation_id in RESP3.
func appendReservation(b []byte, r *engine.Result, key []byte, resp3 bool) []byte {
	extras := r.Extras[:r.NExtras]
	if len(extras) == 0 || extras[len(extras)-1].Name != engine.ExtraReservation {
		return appendDecision(b, r, resp3) // not a reservation's: never from RL.RESERVE
	}
	seq := extras[len(extras)-1].Value
	extras = extras[:len(extras)-1]
	b = appendExtras(appendDecisionHead(b, r.Decision, len(extras)+1, resp3), extras, resp3)
	if resp3 {
		b = resp.AppendBulkString(b, engine.ExtraReservation)
	}
	if seq == 0 {
		return resp.AppendNull(b, resp3)
	}
	return resp.AppendBulk(b, reservationID(nil, seq, key))
}

// reservationID appends the id of reservation seq of key: its slot's tag,
// the seq and the key (commands.AppendReservationID).
func reservationID(b []byte, seq int64, key []byte) []byte {
	return commands.AppendReservationID(b, cluster.SlotTag(cluster.Slot(key)), seq, key)
}

// appendThrottle encodes CL.THROTTLE's reply: five integers, an array in
// RESP2 and RESP3 alike, as redis-cell sends it.
func appendThrottle(b []byte, t engine.ThrottleReply) []byte {
	var limited int64
	if t.Limited {
		limited = 1
	}
	b = resp.AppendArray(b, 5)
	b = resp.AppendInt(b, limited)
	b = resp.AppendInt(b, t.Limit)
	b = resp.AppendInt(b, t.Remaining)
	b = resp.AppendInt(b, t.RetryAfter)
	return resp.AppendInt(b, t.ResetAfter)
}

// appendFields encodes RL.INFO's and RL.POLICY GET's fields: a map of
// names to integers or, where they have text, bulk strings.
func appendFields(b []byte, fields []engine.Field, resp3 bool) []byte {
	b = resp.AppendMap(b, len(fields), resp3)
	for _, f := range fields {
		b = resp.AppendBulkString(b, f.Name)
		if f.Text != "" {
			b = resp.AppendBulkString(b, f.Text)
		} else {
			b = resp.AppendInt(b, f.Int)
		}
	}
	return b
}

// appendRecord encodes a reply of named integers (RL.SHARE's) as the
// decisions' is: an array of the integers in RESP2, read by position, a
// map with their names in RESP3.
func appendRecord(b []byte, fields []engine.Field, resp3 bool) []byte {
	if !resp3 {
		b = resp.AppendArray(b, len(fields))
		for _, f := range fields {
			b = resp.AppendInt(b, f.Int)
		}
		return b
	}
	b = resp.AppendMap(b, len(fields), true)
	for _, f := range fields {
		b = resp.AppendInt(resp.AppendBulkString(b, f.Name), f.Int)
	}
	return b
}

// appendResult encodes one engine result.
func appendResult(b []byte, r *engine.Result, resp3 bool) []byte {
	switch r.Type {
	case engine.ResDecision:
		return appendDecision(b, r, resp3)
	case engine.ResThrottle:
		return appendThrottle(b, r.Throttle)
	case engine.ResInt:
		return resp.AppendInt(b, r.Int)
	case engine.ResText:
		return resp.AppendSimple(b, r.Text)
	case engine.ResBulk:
		return resp.AppendBulkString(b, r.Text)
	case engine.ResIntBulk:
		return resp.AppendBulkInt(b, r.Int)
	case engine.ResOK:
		return resp.AppendOK(b)
	case engine.ResNil:
		return resp.AppendNull(b, resp3)
	case engine.ResNilArray:
		return resp.AppendNullArray(b, resp3)
	case engine.ResFields:
		return appendFields(b, r.Fields, resp3)
	case engine.ResRecord:
		return appendRecord(b, r.Fields, resp3)
	case engine.ResError:
		return appendError(b, r.Err)
	case engine.ResValues:
		return resp.AppendValues(b, r.Values, resp3)
	}
	return appendError(b, engine.ErrUnknownOp)
}
