package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/calendar"
	"github.com/rlserver/rlserver/internal/sfv"
)

// A decision is answered as JSON, the fields of the RESP reply by their
// names, and with the IETF draft's RateLimit-Policy and RateLimit fields
// and RFC 9110's Retry-After, as rlserver's Go middleware writes them, so
// that an edge function can pass them on as they are:
//
//	{"allowed":false,"limit":1000,"remaining":-200,"retry_after_ms":12060,"reset_after_ms":72000}
//	RateLimit-Policy: "token";q=1000;w=60
//	RateLimit: "token";r=0;t=13
//	Retry-After: 13
//
// The status is 200 for every decision, allowed or not: a refusal is an
// answer, not an error, and a client that retried 429s by itself would
// send a FORCE charge twice.

// limitInfo is what the headers say of one limit: its name, and the
// window of its quota in seconds (0: unknown, a policy's).
type limitInfo struct {
	name   string
	window int64
}

// appendDecision appends d, and its extra fields, as a JSON object's
// members (without braces).
func appendDecision(b []byte, r *engine.Result) []byte {
	d := r.Decision
	b = append(b, `"allowed":`...)
	b = strconv.AppendBool(b, d.Allowed)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, d.Limit, 10)
	b = append(b, `,"remaining":`...)
	b = strconv.AppendInt(b, d.Remaining, 10)
	b = append(b, `,"retry_after_ms":`...)
	b = strconv.AppendInt(b, d.RetryAfter, 10)
	b = append(b, `,"reset_after_ms":`...)
	b = strconv.AppendInt(b, d.ResetAfter, 10)
	for _, e := range r.Extras[:r.NExtras] {
		switch e.Name {
		case engine.ExtraReservation: // the id, which the caller appends
		case "shadow_denied":
			b = strconv.AppendBool(append(b, `,"shadow_denied":`...), e.Value != 0)
		default:
			b = append(append(append(b, ',', '"'), e.Name...), '"', ':')
			b = strconv.AppendInt(b, e.Value, 10)
		}
	}
	return b
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// windowOf is the window of c's quota in seconds, rounded up: a window's
// length; the time a bucket takes to refill from empty; a calendar
// period's longest. 0 for a policy, whose parameters live in the shards.
func windowOf(op engine.Op, args [4]int64) int64 {
	var units, rate, ms float64
	for i, p := range op.Spec().Params {
		v := float64(args[i])
		switch p.Role {
		case engine.RoleUnits:
			if units == 0 {
				units = v
			} else {
				rate = v
			}
		case engine.RoleBurst:
			units = v + 1
		case engine.RoleWindow:
			ms = v
		case engine.RolePeriod:
			ms = float64(calendar.Period(args[i]).Longest().Milliseconds())
		}
	}
	if rate > 0 {
		ms = ms * units / rate
	}
	return int64(math.Ceil(ms / 1000))
}

// headers are the RateLimit-Policy and RateLimit fields of limits, with
// their decisions, and Retry-After, of overall.
func headers(limits []limitInfo, ds []engine.Decision, overall engine.Decision) (policy, limit, retry string) {
	var p, l strings.Builder
	for i, li := range limits {
		if i > 0 {
			p.WriteString(", ")
			l.WriteString(", ")
		}
		d := ds[i]
		name := sfv.String(li.name)
		p.WriteString(name + ";q=" + strconv.FormatInt(d.Limit, 10))
		if li.window > 0 {
			p.WriteString(";w=" + strconv.FormatInt(li.window, 10))
		}
		l.WriteString(name + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10))
		if !d.Allowed && d.RetryAfter > 0 {
			l.WriteString(";t=" + strconv.FormatInt(sfv.Seconds(d.RetryAfter), 10))
		}
	}
	if !overall.Allowed && overall.RetryAfter > 0 {
		retry = strconv.FormatInt(sfv.Seconds(overall.RetryAfter), 10)
	}
	return p.String(), l.String(), retry
}

// answer writes one decision: its headers, and its JSON; with reserve, the
// reservation's id (null when refused).
func (s *Server) answer(w http.ResponseWriter, res *engine.Result, id []byte, reserve bool, limits []limitInfo) int {
	d := res.Decision
	setHeaders(w, limits, []engine.Decision{d}, d)
	b := appendDecision(append(make([]byte, 0, 256), '{'), res)
	if reserve {
		b = append(b, `,"reservation_id":`...)
		if id == nil {
			b = append(b, "null"...)
		} else {
			b = appendString(b, string(id))
		}
	}
	_, _ = w.Write(append(b, '}', '\n'))
	return http.StatusOK
}

// answerAll writes RL.ALL's decisions: the overall one's fields, then each
// limit's in "limits".
func (s *Server) answerAll(w http.ResponseWriter, results []engine.Result, limits []limitInfo) int {
	ds := make([]engine.Decision, len(results)-1)
	for i := range ds {
		ds[i] = results[1+i].Decision
	}
	setHeaders(w, limits, ds, results[0].Decision)
	b := appendDecision(append(make([]byte, 0, 128*len(results)), '{'), &results[0])
	b = append(b, `,"limits":[`...)
	for i := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendDecision(append(b, '{'), &results[1+i]), '}')
	}
	_, _ = w.Write(append(b, ']', '}', '\n'))
	return http.StatusOK
}

// setHeaders sets a decision's headers.
func setHeaders(w http.ResponseWriter, limits []limitInfo, ds []engine.Decision, overall engine.Decision) {
	policy, limit, retry := headers(limits, ds, overall)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	// As the draft spells them: Set would write Ratelimit (names are
	// case-insensitive, but people read them).
	h["RateLimit-Policy"] = []string{policy}
	h["RateLimit"] = []string{limit}
	if retry != "" {
		h.Set("Retry-After", retry)
	}
}
