package server

import (
	"testing"

	"github.com/rlserver/rlserver/internal/resp"
)

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
