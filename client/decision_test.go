package client

import (
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
