package client

import (
	"errors"
	"fmt"
	"testing"
)

// An UNCERTAIN reply is told apart from the others, and is an outage: the
// HTTP middleware answers it with its fail mode, and the breaker counts it.
func TestUncertainRepliesAreOutages(t *testing.T) {
	for _, c := range []struct {
		err             error
		uncertain, down bool
	}{
		{replyError("UNCERTAIN shard 2, leader n1: no answer within the request timeout: it may have been counted"), true, true},
		{fmt.Errorf("RL.SLIDING k: %w", replyError("UNCERTAIN forwarded to n3: shard 0, leader n3: the leader lost its leadership: it may have been counted")), true, true},
		{replyError("TRYAGAIN shard 2: no leader was elected within the request timeout: nothing was counted, retry"), false, true},
		{replyError("ERR syntax error"), false, false},
		{errors.New("UNCERTAIN, but not a reply"), false, true},
	} {
		if got := MayHaveBeenCounted(c.err); got != c.uncertain {
			t.Errorf("MayHaveBeenCounted(%q) = %v, want %v", c.err, got, c.uncertain)
		}
		if got := isOutage(c.err); got != c.down {
			t.Errorf("isOutage(%q) = %v, want %v", c.err, got, c.down)
		}
	}
}
