package cluster

import (
	"fmt"
	"net"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// StartRaft starts this node's data plane, after checking cfg with
// Validate: the bus, when the node is one of a cluster, and nothing else.
// Its control plane (cfg.Control) then opens the replicas the node holds
// (OpenReplica) and drops those it no longer does.
func StartRaft(cfg RaftConfig) (*RaftShards, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Control == nil {
		return nil, invalidSetting("RaftConfig.Control", "must be set: the node's control plane says which replicas it holds")
	}
	if err := openJournal(&cfg); err != nil {
		return nil, err
	}
	n := &RaftShards{
		cfg: cfg, ctl: cfg.Control, stop: make(chan struct{}), halted: make(chan error, 1),
		groups: make([]atomic.Pointer[Group], cfg.Shards), foreign: make([]atomic.Pointer[Member], cfg.Shards),
		clock: newClockGuard(cfg.Clock, cfg.MaxClockOffset, cfg.Log, cfg.Bus != nil),
	}
	n.rerouter = n.reroute
	dialer := newBusDialer(cfg.Dial, cfg.Cluster, cfg.BusTLS)
	n.fwd = newForwarder(dialer, n.forwardFailed)
	n.control = newControlCalls(dialer)
	if cfg.Bus != nil {
		n.bus = newBus(cfg.Bus, cfg.Self.Bus, dialer, cfg.BusTLS, cfg.Log, map[byte]func(net.Conn){
			streamControl:    func(c net.Conn) { serveControl(c, n) },
			streamForwardMux: func(c net.Conn) { serveMux(c, n) },
			streamJoin:       func(c net.Conn) { serveJoining(c, n.ctl) },
		})
		go n.bus.accept()
	}
	return n, nil
}

// stream is the bus's stream for shard's group (catalogueGroup for the
// catalogue's), nil for a single node, whose groups need no network.
func (n *RaftShards) stream(shard int) raft.StreamLayer {
	if n.bus == nil {
		return nil
	}
	return n.bus.stream(shard)
}

// openJournal replays the journal a node left in cfg's data directory, if
// any, and opens the node's journal when cfg.LogJournal asks for one.
func openJournal(cfg *RaftConfig) (err error) {
	logger := newRaftLogger(cfg.Log, "journal")
	if cfg.LogJournal {
		cfg.journal, err = persistence.OpenJournal(cfg.Layout.Dir, logger)
	} else {
		err = persistence.ReplayJournal(cfg.Layout.Dir, logger)
	}
	if err != nil {
		return fmt.Errorf("the Raft logs' journal: %w", err)
	}
	return nil
}
