package raftfix

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fullDisk is an in-memory log store whose stores fail while full is set.
type fullDisk struct {
	*raft.InmemStore
	full atomic.Bool
}

var errNoSpace = errors.New("no space left on device")

func (d *fullDisk) StoreLogs(logs []*raft.Log) error {
	if d.full.Load() {
		return errNoSpace
	}
	return d.InmemStore.StoreLogs(logs)
}

func (d *fullDisk) StoreLog(l *raft.Log) error { return d.StoreLogs([]*raft.Log{l}) }

func entry(index, term uint64, data string) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: []byte(data)}
}

// A suffix deleted stays readable until a store succeeds; a compaction's
// deletion does not.
func TestTruncatedTail(t *testing.T) {
	disk := &fullDisk{InmemStore: raft.NewInmemStore()}
	logs := keepTruncatedTail(disk)
	if err := logs.StoreLogs([]*raft.Log{entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c"), entry(4, 1, "d")}); err != nil {
		t.Fatal(err)
	}
	read := func(index uint64) string {
		t.Helper()
		var l raft.Log
		if err := logs.GetLog(index, &l); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d/%s", l.Term, l.Data)
	}
	if err := logs.DeleteRange(3, 4); err != nil {
		t.Fatal(err)
	}
	if got := read(3) + " " + read(4); got != "1/c 1/d" {
		t.Fatalf("the deleted suffix reads %q, want the entries it held", got)
	}
	if last, _ := logs.LastIndex(); last != 2 {
		t.Fatalf("last index %d after the deletion, want 2", last)
	}
	disk.full.Store(true)
	if err := logs.StoreLogs([]*raft.Log{entry(3, 2, "C")}); !errors.Is(err, errNoSpace) {
		t.Fatalf("store on a full disk: %v", err)
	}
	if got := read(3); got != "1/c" {
		t.Fatalf("after a failed store, entry 3 reads %q, want the deleted one", got)
	}
	disk.full.Store(false)
	if err := logs.StoreLogs([]*raft.Log{entry(3, 2, "C")}); err != nil {
		t.Fatal(err)
	}
	if got := read(3) + " " + read(4); got != "2/C "+raft.ErrLogNotFound.Error() {
		t.Fatalf("after a store, entries 3 and 4 read %q, want the new one and none", got)
	}
	if err := logs.DeleteRange(1, 2); err != nil { // a compaction
		t.Fatal(err)
	}
	if got := read(1); got != raft.ErrLogNotFound.Error() {
		t.Fatalf("a compacted entry reads %q", got)
	}
}

// A follower's log conflicts with its new leader's at its last entry, and
// the store of the leader's entry fails (a full disk) after the conflicting
// one was deleted. Once the disk has room, the leader's next append must
// succeed: through truncatedTail the follower finds the deleted entry,
// deletes it again and stores the leader's.
// (TestCanaryFollowerRefusesAppendsAfterAFailedStore plays the same with
// hashicorp/raft alone.)
func TestFollowerCatchesUpAfterAFailedStore(t *testing.T) {
	f := startConflictingFollower(t, true)
	defer f.raft.Shutdown()
	f.disk.full.Store(true)
	if f.send(t) {
		t.Fatal("an append was accepted while the disk was full")
	}
	f.disk.full.Store(false)
	for range 3 {
		if !f.send(t) {
			t.Fatal("with room again, the append was refused")
		}
	}
	var l raft.Log
	if err := f.disk.GetLog(3, &l); err != nil || string(l.Data) != "the new leader's" {
		t.Fatalf("entry 3 on disk: %q, %v", l.Data, err)
	}
}

// Canary for truncatedTail (truncatedtail.go). The follower of
// TestFollowerCatchesUpAfterAFailedStore, with hashicorp/raft alone: after
// the failed store (raft.go, appendEntries: "TODO: leaving r.getLastLog() in
// the wrong state if there was a truncation above"), it still believes it
// holds the deleted entry, finds nothing there ("failed to get log entry")
// and refuses every append, even with room on the disk, until it restarts.
func TestCanaryFollowerRefusesAppendsAfterAFailedStore(t *testing.T) {
	f := startConflictingFollower(t, false)
	f.disk.full.Store(true)
	if f.send(t) {
		f.raft.Shutdown()
		t.Fatal("an append was accepted while the disk was full")
	}
	f.disk.full.Store(false)
	for i := range 3 {
		if f.send(t) {
			f.raft.Shutdown()
			t.Fatalf("with room again, append %d succeeded: hashicorp/raft now keeps its last index right when a store fails after a truncation: truncatedTail may go", i+1)
		}
	}
	// A restart reads the last index from the store, and the append
	// succeeds.
	if err := f.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	f.start(t)
	defer f.raft.Shutdown()
	if !f.send(t) {
		t.Fatal("after a restart the append was refused still")
	}
}

// conflictingFollower is a replica n1, whose log holds a former leader's
// stale entry at index 3, and the new leader of term 2, n2, which the test
// plays.
type conflictingFollower struct {
	disk     *fullDisk
	logs     raft.LogStore // disk, or its truncatedTail
	follower *raft.InmemTransport
	leader   *raft.InmemTransport
	raft     *raft.Raft
}

// startConflictingFollower starts the follower, through truncatedTail
// when kept.
func startConflictingFollower(t *testing.T, kept bool) *conflictingFollower {
	t.Helper()
	disk := &fullDisk{InmemStore: raft.NewInmemStore()}
	if err := disk.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	members := raft.Configuration{Servers: []raft.Server{
		{ID: "n1", Address: "n1"}, {ID: "n2", Address: "n2"}, {ID: "n3", Address: "n3"}}}
	if err := disk.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(members)},
		entry(2, 1, "shared"), entry(3, 1, "stale, never committed"),
	}); err != nil {
		t.Fatal(err)
	}
	f := &conflictingFollower{disk: disk, logs: disk}
	if kept {
		f.logs = keepTruncatedTail(disk)
	}
	f.start(t)
	return f
}

// start starts the follower's Raft on its stores, with a fresh transport.
func (f *conflictingFollower) start(t *testing.T) {
	t.Helper()
	_, f.follower = raft.NewInmemTransport("n1")
	_, f.leader = raft.NewInmemTransport("n2")
	f.follower.Connect("n2", f.leader)
	f.leader.Connect("n1", f.follower)
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	// No election of its own while the test plays the leader.
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = time.Minute, time.Minute, time.Minute
	conf.LogOutput = io.Discard
	r, err := raft.NewRaft(conf, nopFSM{}, f.logs, f.disk, raft.NewInmemSnapshotStore(), f.follower)
	if err != nil {
		t.Fatal(err)
	}
	f.raft = r
}

// send sends the new leader's append, which holds 1 and 2 and carries its
// own entry at 3, and reports whether the follower accepted it.
func (f *conflictingFollower) send(t *testing.T) bool {
	t.Helper()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte("n2")}
	req := &raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 2, PrevLogTerm: 1,
		Entries: []*raft.Log{entry(3, 2, "the new leader's")}}
	var resp raft.AppendEntriesResponse
	if err := f.leader.AppendEntries("n1", "n1", req, &resp); err != nil {
		t.Fatalf("append: %v", err)
	}
	return resp.Success
}

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("not in this test") }
func (nopFSM) Restore(io.ReadCloser) error         { return errors.New("not in this test") }
