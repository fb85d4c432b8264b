package raftfix

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/internal/poll"
)

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

// Canary for replication without the pipeline (transportConfig's
// MaxRPCsInFlight 1). hashicorp/raft's netPipeline (net_transport.go, with
// the default MaxRPCsInFlight 2) hands each append to its decoder through
// an unbuffered channel (inprogressCh), and the decoder hands each answer to
// the consumer through another (doneCh). Raft's consumer, pipelineDecode
// (replication.go), returns at the first answer with Success=false, and
// pipelineReplicate may send once more before it sees that: the decoder then
// waits for good to hand over that send's answer, and the send after it
// waits for good for the decoder; nothing but the pipeline's Close ends
// either, and pipelineReplicate, which defers that Close, is the one
// waiting. hashicorp/raft#612 (open) describes the follower left with
// heartbeats and no entries; grafana/pyroscope#5518 traced it to this.
//
// The test plays pipelineDecode against a peer that refuses every append:
// it reads one answer and stops. The next append still returns (the decoder
// takes it), and the one after it does not, until Close.
//
// The canary fails once netPipeline no longer blocks a send when its
// consumer has stopped (doneCh buffered for every send in flight, or sends
// that give up once the consumer is gone). A fix confined to replication.go
// (pipelineReplicate closing the pipeline, or sending no more, once
// pipelineDecode has returned) would leave it passing: read
// pipelineReplicate on every upgrade before taking MaxRPCsInFlight 1 out.
func TestCanaryPipelineSendWaitsForGoodOnceItsConsumerStops(t *testing.T) {
	server, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	var answered atomic.Int64
	go func() {
		for rpc := range server.Consumer() {
			answered.Add(1)
			rpc.Respond(&raft.AppendEntriesResponse{Term: 2, Success: false}, nil) // a log that does not match
		}
	}()
	client, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	pipeline, err := client.AppendEntriesPipeline("n2", server.LocalAddr())
	if err != nil {
		t.Fatalf("AppendEntriesPipeline: %v: hashicorp/raft's NetworkTransport no longer pipelines by default; see whether pipelining can wait for good still", err)
	}
	closed := false
	defer func() {
		if !closed {
			pipeline.Close()
		}
	}()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n1"), Addr: []byte(client.LocalAddr())}
	send := func(prev uint64) (raft.AppendFuture, error) {
		return pipeline.AppendEntries(&raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: prev, PrevLogTerm: 2,
			Entries: []*raft.Log{{Index: prev + 1, Term: 2, Type: raft.LogCommand}}}, new(raft.AppendEntriesResponse))
	}

	if _, err := send(10); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-pipeline.Consumer():
		if f.Response().Success {
			t.Fatal("the peer accepted the append")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the first append")
	}
	// The consumer stops here, as pipelineDecode returns.
	if _, err := send(11); err != nil {
		t.Fatal(err)
	}
	third := make(chan error, 1)
	go func() {
		_, err := send(12)
		third <- err
	}()
	poll.Until(t, 10*time.Second, "the peer to answer the third append", func() (bool, error) {
		return answered.Load() == 3, nil
	})
	// Its answer is on the connection; all the send waits for is the
	// decoder, which waits for a consumer that is gone. A bounded wait is
	// the assertion: the send does not return.
	select {
	case err := <-third:
		t.Fatalf("the third append returned (%v) with the pipeline's consumer gone: hashicorp/raft's netPipeline no longer waits for good once its consumer stops; if replication.go's pipelineReplicate also stops sending then, pipelining may come back (transportConfig's MaxRPCsInFlight 1 may go)", err)
	case <-time.After(300 * time.Millisecond):
	}
	closed = true
	pipeline.Close()
	select {
	case err := <-third:
		if !errors.Is(err, raft.ErrPipelineShutdown) {
			t.Fatalf("after Close the third append returned %v, want ErrPipelineShutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the third append outlived the pipeline's Close")
	}
}
