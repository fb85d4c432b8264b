package raftfix

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Config is what New needs to start one Raft group.
type Config struct {
	// Raft is hashicorp/raft's configuration for the group.
	Raft *raft.Config
	// FSM is the group's state machine; a raft.BatchingFSM is given its
	// entries in batches.
	FSM raft.FSM
	// Logs, Stable and Snaps are the group's stores. New owns Stable from
	// the call on: the group's Close closes it, and so does a failed New.
	Logs   raft.LogStore
	Stable Store
	Snaps  raft.SnapshotStore
	// Stream carries the group's Raft traffic to and from the other nodes;
	// nil for a group of one node, which gets an in-memory transport at
	// Local. New owns it from the call on, as it owns Stable.
	Stream raft.StreamLayer
	Local  raft.ServerAddress
	// Log takes the transport's records.
	Log hclog.Logger
	// MayLead, when set, says why this node must not lead the group now
	// (nil: it may): while it says so, the node stays out of elections
	// (abstain.go). A group of one node ignores it.
	MayLead func() error
}

// Store is a group's stable store, which closes.
type Store interface {
	raft.StableStore
	io.Closer
}

// Raft is one running group: hashicorp/raft's Raft, with the state its
// corrections keep, which answer what hashicorp/raft does not (which
// configuration is committed, which voters hold it).
type Raft struct {
	*raft.Raft
	committed *committedConfiguration
	snaps     raft.SnapshotStore
	acks      *acknowledged // nil for an in-memory transport: no other voter
	trans     raft.Transport
	stable    Store
}

// New starts a group with every correction this package makes to
// hashicorp/raft: the stores, the transport and the state machine are
// wrapped (see the package's doc), and a damaged log is reported as an
// error, with its cause, instead of a panic.
func New(c Config) (*Raft, error) {
	r := &Raft{committed: new(committedConfiguration), snaps: c.Snaps, stable: c.Stable}
	var held *heldConfigurations
	if c.Stream == nil {
		_, r.trans = raft.NewInmemTransport(c.Local)
	} else {
		var abstain *abstention
		var screen func(raft.RPC) bool
		if c.MayLead != nil {
			abstain = &abstention{mayLead: c.MayLead}
			screen = abstain.screen
		}
		held = withHeldConfigurations(withVerifiedCommits(newNetworkTransport(c.Stream, c.Log), screen))
		r.trans, r.acks = held, &held.acks
		if abstain != nil {
			abstain.netTransport = held
			r.trans = abstain
		}
	}
	logs := keepTruncatedTail(c.Logs)
	err := readLast(logs)
	if err == nil {
		r.Raft, err = newRaft(c.Raft, recordConfigurations(c.FSM, r.committed), logs, r.stable, c.Snaps, r.trans)
	}
	if err != nil {
		closeTransport(r.trans) // else its stream stays on the bus, accepting for nobody
		r.stable.Close()
		return nil, err
	}
	if held != nil {
		held.serve(r.Raft)
	}
	return r, nil
}

// readLast reads the log's last entry. hashicorp/raft's NewRaft reads it
// first, and reports a failure to read it without its cause: read here, a
// damaged entry is reported as such.
//
// Upstream: no hashicorp/raft issue found (searched its issues for NewRaft's
// "failed to get last log" error and for wrapping store errors); the code
// path is api.go, NewRaft, which formats the store's error with %v,
// unchanged in v1.8.0.
// Canary: TestCanaryNewRaftHidesTheCauseOfAnUnreadableLastEntry.
func readLast(logs raft.LogStore) error {
	if last, err := logs.LastIndex(); err == nil && last > 0 {
		return logs.GetLog(last, new(raft.Log))
	}
	return nil
}

// newRaft is raft.NewRaft, returning as an error the panic NewRaft raises
// when its log store fails to read an entry (a damaged log) while it scans
// the entries after the latest snapshot. NewRaft starts no goroutine before
// that scan, so nothing is left running.
//
// Upstream: hashicorp/raft#163, "Panic on storage failures" (closed): a
// panic when a store fails is hashicorp/raft's stated choice, and v1.8.0's
// NewRaft still panics here; hashicorp/raft#429, "Restarting RAFT node could
// fail with panic: log not found [recovered] when using LogCache" (closed),
// met this very panic.
// Canary: TestCanaryNewRaftPanicsOnAnUnreadableEntry.
func newRaft(c *raft.Config, fsm raft.FSM, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, trans raft.Transport) (r *raft.Raft, err error) {
	defer recoverReadPanic(&err)
	return raft.NewRaft(c, fsm, logs, stable, snaps, trans)
}

// ReadConfiguration is raft.GetConfiguration, returning as an error the
// panic it raises on a log entry it cannot read, and reading the last entry
// first, as New does: a damaged log is an error with its cause.
//
// Upstream: as newRaft's; GetConfiguration is NewRaft without its
// goroutines (api.go).
// Canary: TestCanaryGetConfigurationPanicsOnAnUnreadableEntry.
func ReadConfiguration(c *raft.Config, fsm raft.FSM, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, trans raft.Transport) (conf raft.Configuration, err error) {
	defer recoverReadPanic(&err)
	if err := readLast(logs); err != nil {
		return conf, err
	}
	return raft.GetConfiguration(c, fsm, logs, stable, snaps, trans)
}

// recoverReadPanic turns a panic with an error, hashicorp/raft's way of
// failing a read of the log while it starts, into *err.
func recoverReadPanic(err *error) {
	if p := recover(); p != nil {
		perr, ok := p.(error)
		if !ok {
			panic(p)
		}
		*err = fmt.Errorf("reading the log: %w", perr)
	}
}

// Configuration reads the group's latest configuration and the index it
// was committed at; ok is false while it is not known to be committed (a
// change being committed, or its commit not applied here yet). See
// committedconfig.go.
func (r *Raft) Configuration() (servers []raft.Server, index uint64, ok bool) {
	return latestConfiguration(r.Raft, r.committed, r.snaps)
}

// VotersHold reports whether every one of voters, other than this node
// and except, has acknowledged the entry at index (the group's
// configuration) to this node as leader. A group of one node reports true:
// there is no other voter to wait for. See acknowledged.go.
func (r *Raft) VotersHold(voters []string, index uint64, self string, except ...string) bool {
	return r.acks.votersHold(voters, index, self, except...)
}

// shutdownBound is how long Close waits for hashicorp/raft's goroutines to
// end. A replication goroutine to a peer that stopped answering in the
// middle of an append stays blocked inside hashicorp/raft for as long as the
// transport lets it: up to its Timeout (10 s, transportConfig) for an
// append, the Timeout scaled by the snapshot's size for a snapshot, and for
// good with the pipeline, which transport.go turns off. Past the bound the
// group is closed without it, rather than holding up the node's shutdown or
// its membership changes. Its reads of the closed log store fail
// harmlessly.
//
// Upstream: no issue found for the NetworkTransport (searched
// hashicorp/raft's issues for Shutdown hanging on replication);
// hashicorp/raft#312, "Raft.Shutdown() with InmemTransport hangs after
// leader changed" (closed, fixed for that transport's sends by
// hashicorp/raft#313), is the same wait. The code path is future.go,
// shutdownFuture.Error: it waits for every goroutine, then closes the
// transport; unchanged in v1.8.0.
// Canary: TestCanaryShutdownWaitsForAReplicationBlockedInItsTransport.
const shutdownBound = 5 * time.Second

// Close shuts the group down, waiting for hashicorp/raft at most
// shutdownBound, then closes its transport and its stores. what names the
// group in the log.
func (r *Raft) Close(what string, log *slog.Logger) error {
	err := shutdownBounded(r.Raft, what, log)
	closeTransport(r.trans)
	if cerr := r.stable.Close(); err == nil {
		err = cerr
	}
	return err
}

// shutdowner is the part of *raft.Raft shutdownBounded uses.
type shutdowner interface{ Shutdown() raft.Future }

// shutdownBounded shuts r down, waiting for it at most shutdownBound.
func shutdownBounded(r shutdowner, what string, log *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- r.Shutdown().Error() }()
	timer := time.NewTimer(shutdownBound)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		log.Warn("Raft's goroutines did not stop in time; closing without them", "group", what, "waited", shutdownBound)
		return nil
	}
}

// closeTransport closes t when it has a Close.
func closeTransport(t raft.Transport) {
	if c, ok := t.(io.Closer); ok {
		c.Close()
	}
}
