package raftfix

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
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

// idleStream is a stream layer that accepts nothing until it is closed.
type idleStream struct{ closed chan struct{} }

func (s idleStream) Accept() (net.Conn, error) { <-s.closed; return nil, net.ErrClosed }
func (s idleStream) Close() error              { close(s.closed); return nil }
func (s idleStream) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (s idleStream) Dial(raft.ServerAddress, time.Duration) (net.Conn, error) {
	return nil, net.ErrClosed
}

// The groups' transport replicates without hashicorp/raft's pipeline, whose
// sender can wait for good once a follower refuses an append.
func TestTransportDoesNotPipeline(t *testing.T) {
	trans := raft.NewNetworkTransportWithConfig(transportConfig(idleStream{make(chan struct{})}, nil))
	defer trans.Close()
	if _, err := trans.AppendEntriesPipeline("n2", "127.0.0.1:1"); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline: %v, want ErrPipelineReplicationNotSupported", err)
	}
}
