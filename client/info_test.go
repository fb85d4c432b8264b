package client

import (
	"errors"
	"testing"
	"time"
)

func TestParseInfoRESP2AndRESP3(t *testing.T) {
	resp2 := []any{"algorithm", "rl.sliding", "limit", int64(100), "window_ms", int64(60000),
		"remaining", int64(47), "reset_after_ms", int64(45000), "ttl_ms", int64(45000)}
	resp3 := map[any]any{"algorithm": "rl.sliding", "limit": int64(100), "window_ms": int64(60000),
		"remaining": int64(47), "reset_after_ms": int64(45000), "ttl_ms": int64(45000)}
	for name, reply := range map[string]any{"RESP2": resp2, "RESP3": resp3} {
		info, err := parseInfo(reply)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if info.Algorithm != "rl.sliding" || info.Remaining != 47 || info.ResetAfter != 45*time.Second ||
			info.TTL != 45*time.Second || info.Fields["limit"] != 100 || info.Fields["window_ms"] != 60000 {
			t.Errorf("%s: %+v", name, info)
		}
	}
	if _, err := parseInfo([]any{"limit"}); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("odd array: %v", err)
	}
	if _, err := parseInfo([]any{"limit", int64(1)}); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("no algorithm: %v", err)
	}
}

// RL.QUOTA's key has a string field besides the algorithm.
func TestParseInfoStrings(t *testing.T) {
	info, err := parseInfo(map[any]any{"algorithm": "rl.quota", "limit": int64(10), "period": "MONTH", "offset_minutes": int64(180)})
	if err != nil || info.Strings["period"] != "MONTH" || info.Fields["offset_minutes"] != 180 || info.Algorithm != "rl.quota" {
		t.Fatalf("%+v %v", info, err)
	}
	if _, err := parseInfo([]any{"algorithm", "rl.quota", "period", []any{}}); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("array field: %v", err)
	}
}
