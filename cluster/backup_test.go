package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// A backup's snapshot refused because the shard's leadership is changing
// hands is one the backup tool retries (TRYAGAIN, through ErrNotApplied);
// other failures are not.
func TestBackupSnapshotRefusalsThatARetryMends(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{raft.ErrLeadershipTransferInProgress, true},
		{fmt.Errorf("user snapshot: %w", raft.ErrNotLeader), true},
		{raft.ErrLeadershipLost, true},
		{raft.ErrNothingNewToSnapshot, false},
		{errors.New("disk full"), false},
		{nil, false},
	} {
		if got := leadershipMoving(tc.err); got != tc.want {
			t.Errorf("leadershipMoving(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
