package raftfix

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// stuckRaft is a Raft whose shutdown never ends, as one whose replication
// pipeline is blocked inside hashicorp/raft.
type stuckRaft struct{}

func (stuckRaft) Shutdown() raft.Future { return stuckFuture{} }

type stuckFuture struct{}

func (stuckFuture) Error() error { select {} }

// A group whose Raft does not stop is closed anyway, after the bound, and
// the log says so: neither the node's shutdown nor a dropped replica waits
// for it for good.
func TestShutdownRaftIsBounded(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	start := time.Now()
	err := shutdownBounded(stuckRaft{}, "shard 2", slog.New(slog.NewTextHandler(&logs, nil)))
	took := time.Since(start)
	if err != nil || took < shutdownBound || took > shutdownBound+5*time.Second {
		t.Fatalf("shutdownRaft: %v after %v, want nil after about %v", err, took, shutdownBound)
	}
	if !strings.Contains(logs.String(), "did not stop in time") || !strings.Contains(logs.String(), "shard 2") {
		t.Fatalf("log: %s", logs.String())
	}
}
