package client

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestParseDecisionRESP2AndRESP3(t *testing.T) {
	want := Decision{Allowed: false, Limit: 10, Remaining: 6, RetryAfter: 2 * time.Second, ResetAfter: 4 * time.Second}
	resp2 := []any{int64(0), int64(10), int64(6), int64(2000), int64(4000)}
	resp3 := map[any]any{"allowed": int64(0), "limit": int64(10), "remaining": int64(6), "retry_after_ms": int64(2000), "reset_after_ms": int64(4000)}
	for name, reply := range map[string]any{"RESP2 array": resp2, "RESP3 map": resp3} {
		got, err := parseDecision(reply)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

func TestParseDecisionAllowedAndNever(t *testing.T) {
	got, err := parseDecision([]any{int64(1), int64(100), int64(99), int64(0), int64(120000)})
	if err != nil || !got.Allowed || got.RetryAfter != 0 || got.ResetAfter != 2*time.Minute {
		t.Fatalf("allowed: %+v %v", got, err)
	}
	got, err = parseDecision(map[any]any{"allowed": int64(0), "limit": int64(100), "remaining": int64(0), "retry_after_ms": int64(-1), "reset_after_ms": int64(105000)})
	if err != nil || got.Allowed || got.RetryAfter != Never {
		t.Fatalf("cost above the limit: %+v %v, want RetryAfter Never", got, err)
	}
}

func TestParseDecisionSaturates(t *testing.T) {
	got, err := parseDecision([]any{int64(1), int64(1), int64(0), int64(0), int64(math.MaxInt64)})
	if err != nil || got.ResetAfter != math.MaxInt64 {
		t.Fatalf("got %+v %v, want ResetAfter saturated", got, err)
	}
}

func TestParseDecisionRejectsOtherShapes(t *testing.T) {
	for name, reply := range map[string]any{
		"nil":             nil,
		"short array":     []any{int64(1), int64(2)},
		"string element":  []any{int64(1), "10", int64(9), int64(0), int64(0)},
		"map missing key": map[any]any{"allowed": int64(1)},
		"status":          "OK",
	} {
		if _, err := parseDecision(reply); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("%s: err %v, want ErrUnexpectedReply", name, err)
		}
	}
}

// CL.THROTTLE's reply is redis-cell's: limited first, seconds, -1 both when
// allowed and when the quantity can never be allowed.
func TestParseThrottle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply []any
		want  Decision
	}{
		{"allowed", []any{int64(0), int64(16), int64(15), int64(-1), int64(2)},
			Decision{Allowed: true, Limit: 16, Remaining: 15, ResetAfter: 2 * time.Second}},
		{"limited", []any{int64(1), int64(16), int64(0), int64(2), int64(32)},
			Decision{Limit: 16, RetryAfter: 2 * time.Second, ResetAfter: 32 * time.Second}},
		{"never", []any{int64(1), int64(16), int64(0), int64(-1), int64(32)},
			Decision{Limit: 16, RetryAfter: Never, ResetAfter: 32 * time.Second}},
	} {
		got, err := parseThrottle(tc.reply)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := parseThrottle(map[any]any{}); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("map: err %v, want ErrUnexpectedReply", err)
	}
}

// Extra fields come after the common five: bare integers named by their
// position in RESP2, map entries in RESP3.
func TestParseDecisionExtras(t *testing.T) {
	want := Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 2 * time.Second, Delay: time.Second}
	resp2 := []any{int64(1), int64(3), int64(1), int64(0), int64(2000), int64(1000)}
	resp3 := map[any]any{"allowed": int64(1), "limit": int64(3), "remaining": int64(1), "retry_after_ms": int64(0),
		"reset_after_ms": int64(2000), "delay_ms": int64(1000)}
	for name, reply := range map[string]any{"RESP2 array": resp2, "RESP3 map": resp3} {
		got, err := parseDecision(reply, extraDelay)
		if err != nil || got != want {
			t.Errorf("%s: got %+v %v, want %+v", name, got, err, want)
		}
	}
	// RESP2 extras are positional, so their count must be what the command
	// answers; RESP3 names them, so an unknown one (a newer server) is fine.
	if _, err := parseDecision(resp2); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("RESP2 with an extra nobody asked for: %v, want ErrUnexpectedReply", err)
	}
	if _, err := parseDecision(resp2[:5], extraDelay); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("RESP2 without the delay: %v, want ErrUnexpectedReply", err)
	}
	resp3["future_field"], resp3["future_text"] = int64(7), "x"
	if got, err := parseDecision(resp3, extraDelay); err != nil || got != want {
		t.Errorf("RESP3 with an unknown extra: %+v %v", got, err)
	}
	delete(resp3, "delay_ms")
	if _, err := parseDecision(resp3, extraDelay); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("RESP3 without the delay: %v, want ErrUnexpectedReply", err)
	}
	if _, err := parseDecision(map[any]any{"allowed": int64(1), "limit": int64(3), "remaining": int64(1),
		"retry_after_ms": int64(0), "reset_after_ms": int64(0), "delay_ms": "soon"}); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("RESP3 string extra: %v, want ErrUnexpectedReply", err)
	}
}

func TestParsePartialAcquireAndShadow(t *testing.T) {
	five := []any{int64(1), int64(10), int64(0), int64(0), int64(10000)}
	fiveMap := func(extra ...any) map[any]any {
		m := map[any]any{"allowed": five[0], "limit": five[1], "remaining": five[2], "retry_after_ms": five[3], "reset_after_ms": five[4]}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	for name, reply := range map[string]any{
		"RESP2": append(five[:5:5], int64(10)),
		"RESP3": fiveMap("granted", int64(10)),
	} {
		granted, d, err := parsePartial(reply)
		if err != nil || granted != 10 || !d.Allowed || d.Remaining != 0 {
			t.Errorf("%s PARTIAL: %d %+v %v", name, granted, d, err)
		}
		id, d, err := parseAcquire(reply) // the same shape, named lease_id

		if name == "RESP3" {
			if !errors.Is(err, ErrUnexpectedReply) {
				t.Errorf("RESP3 lease without lease_id: %v", err)
			}
			continue
		}
		if err != nil || id != 10 || !d.Allowed {
			t.Errorf("%s acquire: %d %+v %v", name, id, d, err)
		}
	}
	if _, _, err := parseAcquire(fiveMap("lease_id", int64(0))); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("granted lease 0: %v, want ErrUnexpectedReply", err)
	}
	// A policy's verdict, with and without PARTIAL, in both forms. RESP2's
	// extras are granted (PARTIAL), delay_ms (a Shape policy), then
	// shadow_denied, always.
	var c *Client
	for _, tc := range []struct {
		reply   any
		partial bool
		granted int64
		want    Decision
	}{
		{append(five[:5:5], int64(1), int64(0)), true, 1, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second}},
		{append(five[:5:5], int64(0), int64(300), int64(1)), true, 0, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second, Delay: 300 * time.Millisecond, ShadowDenied: true}},
		{append(five[:5:5], int64(500), int64(1)), false, 0, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second, Delay: 500 * time.Millisecond, ShadowDenied: true}},
		{append(five[:5:5], int64(1)), false, 0, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second, ShadowDenied: true}},
		{append(five[:5:5], int64(0)), false, 0, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second}},
		{fiveMap("shadow_denied", int64(1)), false, 0, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second, ShadowDenied: true}},
		{fiveMap("granted", int64(4), "shadow_denied", int64(0)), true, 4, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second}},
		{fiveMap("delay_ms", int64(250), "shadow_denied", int64(0)), false, 0, Decision{Allowed: true, Limit: 10, ResetAfter: 10 * time.Second, Delay: 250 * time.Millisecond}},
	} {
		r, err := readDecision(tc.reply)
		if err == nil {
			err = c.nameCheckExtras(&r, tc.partial)
		}
		if err != nil || r.decision() != tc.want || r.extras[extraGranted] != tc.granted {
			t.Errorf("%v partial=%v: %+v granted %d %v, want %+v granted %d", tc.reply, tc.partial, r.decision(), r.extras[extraGranted], err, tc.want, tc.granted)
		}
	}
}

// RL.ALL answers an array of decisions in both protocols: the overall one,
// then each limit's.
func TestParseAll(t *testing.T) {
	limits := []KeyedRule{
		{Key: "{u}:s", Rule: SlidingWindow{2, time.Second}},
		{Key: "{u}:q", Rule: Shape{3, 1, time.Second}},
	}
	resp2 := []any{
		[]any{int64(1), int64(2), int64(1), int64(0), int64(2000)},
		[]any{int64(1), int64(2), int64(1), int64(0), int64(2000)},
		[]any{int64(1), int64(3), int64(1), int64(0), int64(2000), int64(1000)},
	}
	asMap := func(a []any, extras ...any) map[any]any {
		m := map[any]any{}
		for i, name := range decisionFields {
			m[name] = a[i]
		}
		for i := 0; i < len(extras); i += 2 {
			m[extras[i]] = extras[i+1]
		}
		return m
	}
	resp3 := []any{asMap(resp2[0].([]any)), asMap(resp2[1].([]any)), asMap(resp2[2].([]any), "delay_ms", int64(1000))}
	wantEach := []Decision{
		{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 2 * time.Second},
		{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 2 * time.Second, Delay: time.Second},
	}
	wantOverall := Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 2 * time.Second, Delay: time.Second}
	var c *Client
	for name, reply := range map[string]any{"RESP2": resp2, "RESP3": resp3} {
		overall, each, err := c.parseAll(context.Background(), reply, limits)
		if err != nil || overall != wantOverall || len(each) != 2 || each[0] != wantEach[0] || each[1] != wantEach[1] {
			t.Errorf("%s: %+v %+v %v", name, overall, each, err)
		}
	}
	if _, _, err := c.parseAll(context.Background(), resp2[:2], limits); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("one decision short: %v, want ErrUnexpectedReply", err)
	}
}
