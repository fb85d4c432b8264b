package client

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestParsePolicyInfoRESP2AndRESP3(t *testing.T) {
	resp2 := []any{"definition", "FIXED 1 1000 SHADOW", "shadow", int64(1), "checks", int64(3),
		"denied", int64(0), "shadow_denied", int64(1)}
	resp3 := map[any]any{"definition": "FIXED 1 1000 SHADOW", "shadow": int64(1), "checks": int64(3),
		"denied": int64(0), "shadow_denied": int64(1), "a_newer_counter": int64(9)}
	want := PolicyInfo{
		ServerPolicy: ServerPolicy{Name: "trial", Rule: FixedWindow{1, time.Second}, Shadow: true},
		Definition:   "FIXED 1 1000 SHADOW", Checks: 3, ShadowDenied: 1,
	}
	for name, reply := range map[string]any{"RESP2": resp2, "RESP3": resp3} {
		got, err := parsePolicyInfo("trial", reply)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", name, got, err, want)
		}
	}
	for name, reply := range map[string]any{
		"definition not a string": []any{"definition", int64(1)},
		"counter not an integer":  []any{"definition", "FIXED 1 1000", "checks", "3"},
		"bad definition":          []any{"definition", "FIXED 1"},
		"not pairs":               []any{"definition"},
	} {
		if _, err := parsePolicyInfo("p", reply); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("%s: %v, want ErrUnexpectedReply", name, err)
		}
	}
}

// replyError is an error reply as go-redis returns one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// Only the reply saying so is ErrNoSuchPolicy, and it stays the reply.
func TestPolicyError(t *testing.T) {
	err := policyError(fmt.Errorf("wrapped: %w", replyError("ERR no such policy 'nope'")))
	var reply replyError
	if !errors.Is(err, ErrNoSuchPolicy) || !errors.As(err, &reply) {
		t.Errorf("no such policy: %v", err)
	}
	for _, other := range []error{replyError("ERR syntax error"), errors.New("ERR no such policy, but not a reply")} {
		if err := policyError(other); errors.Is(err, ErrNoSuchPolicy) || err != other {
			t.Errorf("%v became %v", other, err)
		}
	}
}
