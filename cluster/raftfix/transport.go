package raftfix

import (
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// newNetworkTransport is hashicorp/raft's network transport over stream,
// whose connections check themselves before a request (staleconn.go),
// without pipelined replication.
//
// MaxRPCsInFlight 1 turns the pipeline off. With its default of 2 the
// pipeline's channels are unbuffered, and when a follower answers an append
// with Success=false (a log that does not match, after every change of
// leader) the pipeline's decoder exits while its sender may already be
// committed to one more send, which then waits for good: the follower gets
// heartbeats and no entries ever again, and the group cannot shut down
// (grafana/pyroscope#5518 describes the same). Each append then waits for
// its answer; entries are batched anyway (up to MaxAppendEntries), which is
// where the throughput comes from.
//
// Upstream: hashicorp/raft#612, "Leader stopped sending appendEntries to the
// follower, but heartbeat was working" (open; a comment there traces it to
// pipeline replication, with grafana/pyroscope#5518, "fix(metastore):
// disable raft pipeline replication", which turns it off as this does). The
// open PR hashicorp/raft#683 says it fixes #612 but changes heartbeats, not
// the pipeline. The code path is net_transport.go, netPipeline
// (decodeResponses, AppendEntries) and replication.go, pipelineReplicate and
// pipelineDecode; unchanged in v1.8.0.
// Canary: TestCanaryPipelineSendWaitsForGoodOnceItsConsumerStops.
func newNetworkTransport(stream raft.StreamLayer, log hclog.Logger) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(transportConfig(staleCheckedStream{stream}, log))
}

// transportConfig is the network transport's configuration over stream.
func transportConfig(stream raft.StreamLayer, log hclog.Logger) *raft.NetworkTransportConfig {
	return &raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, MaxRPCsInFlight: 1,
		Logger: log,
	}
}
