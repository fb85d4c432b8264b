package cluster

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// Every error Raft can end an entry with becomes one of the two TRYAGAIN
// replies. Found by the full-disk fault test (tests/faults_test.go): a
// leader whose log store could not write answered its clients
// "ERR shard commit failed: unable to store logs within log store, err:
// "write .../raft.db: no space left on device"": an error no client acts
// on, carrying a server path, for a request whose fate is unknown.
func TestRequestErrorIsATryAgain(t *testing.T) {
	full := fmt.Errorf("unable to store logs within log store, err: %w", syscall.ENOSPC)
	cases := []struct {
		err  error
		want error // nil: no error
	}{
		{nil, nil},
		{raft.ErrNotLeader, ErrNotApplied},
		{raft.ErrLeadershipTransferInProgress, ErrNotApplied},
		{raft.ErrEnqueueTimeout, ErrNotApplied},
		{raft.ErrLeadershipLost, ErrMayHaveBeenCounted},
		{raft.ErrRaftShutdown, ErrMayHaveBeenCounted},
		{raft.ErrAbortedByRestore, ErrMayHaveBeenCounted},
		{full, ErrMayHaveBeenCounted},
	}
	for _, c := range cases {
		got := (&proposer{shard: 1, self: "n1"}).requestError(c.err)
		if (got == nil) != (c.want == nil) || !errors.Is(got, c.want) {
			t.Errorf("requestError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
