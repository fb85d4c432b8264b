package raftfix

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/internal/poll"
)

// errDamaged is the log store's failure to read a damaged entry.
var errDamaged = errors.New("damaged entry")

// damagedLog is an in-memory log store that cannot read the entry at bad.
type damagedLog struct {
	*raft.InmemStore
	bad uint64
}

func (d *damagedLog) GetLog(index uint64, l *raft.Log) error {
	if index == d.bad {
		return errDamaged
	}
	return d.InmemStore.GetLog(index, l)
}

// damagedGroup is the stores and the rest of a replica whose log holds a
// configuration and two commands, with the entry at bad unreadable.
func damagedGroup(t *testing.T, bad uint64) (*raft.Config, *damagedLog, raft.Transport) {
	t.Helper()
	logs := &damagedLog{InmemStore: raft.NewInmemStore(), bad: bad}
	members := raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "n1"}}}
	if err := logs.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(members)},
		entry(2, 1, "a"), entry(3, 1, "b"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := logs.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.LogOutput = io.Discard
	_, trans := raft.NewInmemTransport("n1")
	return conf, logs, trans
}

// panicOf runs f and returns what it panicked with, or nil.
func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// A damaged entry after the latest snapshot, or a damaged last entry, is an
// error that says so and keeps its cause, from newRaft (New) and
// ReadConfiguration alike, never a panic.
func TestADamagedLogIsAnError(t *testing.T) {
	for _, bad := range []uint64{2, 3} {
		t.Run(fmt.Sprintf("entry %d of 3", bad), func(t *testing.T) {
			conf, logs, trans := damagedGroup(t, bad)
			var err error
			if p := panicOf(func() { err = readLast(logs) }); p != nil {
				t.Fatalf("readLast panicked: %v", p)
			}
			if bad == 3 && !errors.Is(err, errDamaged) {
				t.Errorf("readLast: %v, want the damage", err)
			}
			var r *raft.Raft
			if p := panicOf(func() { r, err = newRaft(conf, nopFSM{}, logs, logs, raft.NewInmemSnapshotStore(), trans) }); p != nil {
				t.Fatalf("newRaft panicked: %v", p)
			}
			if r != nil {
				r.Shutdown().Error()
			}
			if bad == 2 && !errors.Is(err, errDamaged) {
				t.Errorf("newRaft: %v, want the damage", err)
			}
			conf, logs, trans = damagedGroup(t, bad)
			if p := panicOf(func() { _, err = ReadConfiguration(conf, nopFSM{}, logs, logs, raft.NewInmemSnapshotStore(), trans) }); p != nil {
				t.Fatalf("ReadConfiguration panicked: %v", p)
			}
			// (For a damaged last entry the error is hashicorp/raft's, without
			// its cause: ReadConfiguration does not read the last entry first,
			// as New does.)
			if err == nil {
				t.Error("ReadConfiguration read a damaged log without an error")
			}
		})
	}
}

// Canary for newRaft's recovery (raft.go). hashicorp/raft's NewRaft scans
// the entries after the latest snapshot for configurations (api.go,
// NewRaft), and panics with the log store's error when it cannot read one,
// as hashicorp/raft#163 chose for storage failures.
func TestCanaryNewRaftPanicsOnAnUnreadableEntry(t *testing.T) {
	conf, logs, trans := damagedGroup(t, 2)
	var err error
	p := panicOf(func() {
		var r *raft.Raft
		if r, err = raft.NewRaft(conf, nopFSM{}, logs, logs, raft.NewInmemSnapshotStore(), trans); err == nil {
			r.Shutdown().Error()
		}
	})
	if perr, ok := p.(error); !ok || !errors.Is(perr, errDamaged) {
		t.Fatalf("NewRaft on a log whose entry 2 of 3 cannot be read panicked with %v and returned %v: hashicorp/raft's NewRaft no longer panics with the log store's error: newRaft's recover (recoverReadPanic) may go", p, err)
	}
}

// Canary for ReadConfiguration's recovery (raft.go). hashicorp/raft's
// GetConfiguration is NewRaft without starting it (api.go), and panics as
// it does.
func TestCanaryGetConfigurationPanicsOnAnUnreadableEntry(t *testing.T) {
	conf, logs, trans := damagedGroup(t, 2)
	var err error
	p := panicOf(func() {
		_, err = raft.GetConfiguration(conf, nopFSM{}, logs, logs, raft.NewInmemSnapshotStore(), trans)
	})
	if perr, ok := p.(error); !ok || !errors.Is(perr, errDamaged) {
		t.Fatalf("GetConfiguration on a log whose entry 2 of 3 cannot be read panicked with %v and returned %v: hashicorp/raft's GetConfiguration no longer panics with the log store's error: ReadConfiguration's recover may go", p, err)
	}
}

// Canary for readLast (raft.go). hashicorp/raft's NewRaft reports a last
// entry it cannot read as "failed to get last log at index N: ..." (api.go,
// NewRaft), formatting the log store's error with %v: the error does not
// carry its cause, and a caller cannot tell a damaged entry (which
// rlserver's persistence reports as such) from any other failure.
func TestCanaryNewRaftHidesTheCauseOfAnUnreadableLastEntry(t *testing.T) {
	conf, logs, trans := damagedGroup(t, 3)
	var err error
	if p := panicOf(func() {
		var r *raft.Raft
		if r, err = raft.NewRaft(conf, nopFSM{}, logs, logs, raft.NewInmemSnapshotStore(), trans); err == nil {
			r.Shutdown().Error()
		}
	}); p != nil {
		t.Fatalf("NewRaft panicked on an unreadable last entry (%v): readLast still reports it as an error, but see newRaft's recover", p)
	}
	if err == nil {
		t.Fatal("NewRaft started on a log whose last entry cannot be read")
	}
	if errors.Is(err, errDamaged) {
		t.Fatalf("NewRaft's error (%v) now carries the log store's: readLast may go", err)
	}
}

// Canary for the bounded shutdown (shutdownBounded). hashicorp/raft's Shutdown
// future waits for every goroutine of the group, replication's among them,
// and closes the transport only after (future.go, shutdownFuture.Error): a
// replication goroutine blocked in its transport holds it for as long as the
// transport does. The test's transport holds every append to the follower
// until released.
func TestCanaryShutdownWaitsForAReplicationBlockedInItsTransport(t *testing.T) {
	type node struct {
		raft  *raft.Raft
		trans *blockingTransport
	}
	var nodes []node
	var servers []raft.Server
	for _, id := range []raft.ServerID{"n1", "n2"} {
		servers = append(servers, raft.Server{ID: id, Address: raft.ServerAddress(id)})
	}
	for i, s := range servers {
		_, inmem := raft.NewInmemTransport(s.Address)
		nodes = append(nodes, node{trans: &blockingTransport{InmemTransport: inmem, release: make(chan struct{})}})
		conf := raft.DefaultConfig()
		conf.LocalID = s.ID
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		conf.LogOutput = io.Discard
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(conf, nopFSM{}, store, store, raft.NewInmemSnapshotStore(), nodes[i].trans)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i].raft = r
	}
	nodes[0].trans.Connect("n2", nodes[1].trans.InmemTransport)
	nodes[1].trans.Connect("n1", nodes[0].trans.InmemTransport)
	for _, n := range nodes {
		t.Cleanup(func() {
			n.trans.unblock()
			n.raft.Shutdown().Error()
		})
	}
	if err := nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	var leader node
	poll.Until(t, 10*time.Second, "a leader", func() (bool, error) {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n
				return true, nil
			}
		}
		return false, nil
	})
	leader.trans.blocking.Store(true)
	poll.Until(t, 10*time.Second, "an append to the follower to be held in the transport", func() (bool, error) {
		return leader.trans.held.Load() > 0, nil
	})

	shutdown := make(chan error, 1)
	go func() { shutdown <- leader.raft.Shutdown().Error() }()
	// A bounded wait is the assertion: Shutdown does not end while the
	// append is held.
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown ended (%v) while a replication goroutine was held in its transport: hashicorp/raft's Shutdown no longer waits for it: the bounded shutdown (shutdownBounded) may go", err)
	case <-time.After(500 * time.Millisecond):
	}
	leader.trans.unblock()
	select {
	case err := <-shutdown:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not end once the transport let the append go")
	}
}

// blockingTransport is an in-memory transport without pipelining whose
// appends, once blocking is set, wait until unblock.
type blockingTransport struct {
	*raft.InmemTransport
	blocking atomic.Bool
	held     atomic.Int64 // appends waiting
	release  chan struct{}
	once     sync.Once
}

func (b *blockingTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if b.blocking.Load() {
		b.held.Add(1)
		<-b.release
		b.held.Add(-1)
	}
	return b.InmemTransport.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline refuses, so that every append goes through
// AppendEntries.
func (b *blockingTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// unblock lets every append go, from now on.
func (b *blockingTransport) unblock() {
	b.blocking.Store(false)
	b.once.Do(func() { close(b.release) })
}
