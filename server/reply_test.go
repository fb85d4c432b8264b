package server

import (
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// A record (RL.SHARE's reply) reads by position in RESP2, by name in
// RESP3, as a decision does.
func TestRecordReplies(t *testing.T) {
	fields := []engine.Field{{Name: "rate", Int: 500}, {Name: "seq", Int: -1}}
	if got := string(appendRecord(nil, fields, false)); got != "*2\r\n:500\r\n:-1\r\n" {
		t.Errorf("RESP2: %q", got)
	}
	if got := string(appendRecord(nil, fields, true)); got != "%2\r\n$4\r\nrate\r\n:500\r\n$3\r\nseq\r\n:-1\r\n" {
		t.Errorf("RESP3: %q", got)
	}
}

// The decision's field names, written as constants, are the bulk strings
// the codec writes.
func TestDecisionKeysAreBulkStrings(t *testing.T) {
	for name, key := range map[string]resp.Encoded{
		"allowed": keyAllowed, "limit": keyLimit, "remaining": keyRemaining,
		"retry_after_ms": keyRetryAfter, "reset_after_ms": keyResetAfter,
	} {
		if want := resp.EncodeBulk(name); key != want {
			t.Errorf("%s: %q, want %q", name, key, want)
		}
	}
}
