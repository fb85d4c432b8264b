package persistence

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/internal/poll"
)

// openWatched opens a WAL log store in a new directory, watched with
// slowAfter and faults.
func openWatched(t *testing.T, slowAfter time.Duration, faults *DiskFaults) (Store, *DiskHealth, string) {
	t.Helper()
	dir := t.TempDir()
	store, health := WatchDisk(openTestLogs(t, dir, LogWAL), dir, slowAfter, faults)
	t.Cleanup(func() { store.Close() })
	return store, health, dir
}

// appendEntry appends entry index, of 1,000 bytes, and returns the error.
func appendEntry(logs raft.LogStore, index uint64) error {
	return logs.StoreLogs([]*raft.Log{{Index: index, Term: 1, Data: make([]byte, 1000)}})
}

// An append that fails (a full disk, an I/O error) makes the log failing,
// with the os's error, until a probe of the disk succeeds. Probes write in
// the group's directory and leave nothing behind.
func TestDiskHealthFailsUntilAProbeSucceeds(t *testing.T) {
	faults := new(DiskFaults)
	store, health, dir := openWatched(t, time.Second, faults)
	logs := CheckedLogs(store)
	if err := appendEntry(logs, 1); err != nil {
		t.Fatal(err)
	}
	if err := health.Failing(); err != nil {
		t.Fatalf("failing after an append that succeeded: %v", err)
	}
	faults.Fail(syscall.ENOSPC)
	err := appendEntry(logs, 2)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append with ENOSPC injected: %v", err)
	}
	failing := health.Failing()
	if !errors.Is(failing, ErrLogWriteFailed) || !errors.Is(failing, syscall.ENOSPC) {
		t.Fatalf("Failing after a failed append: %v", failing)
	}
	health.probe() // as the probes do, while the fault lasts
	if err := health.Failing(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Failing after a probe that failed: %v", err)
	}
	faults.Fail(0)
	start := time.Now()
	poll.Until(t, 3*ProbeInterval, "a probe to end the failure", func() (bool, error) {
		return health.Failing() == nil, nil
	})
	t.Logf("the failure ended %v after the disk worked again", time.Since(start).Round(time.Millisecond))
	if err := appendEntry(logs, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, probeFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the probe's file is left behind: %v", err)
	}
}

// Appends slower than the threshold, slowWrites in a row, make the log slow;
// as many in a row within it make it fast again. One slow append among fast
// ones is a hiccup.
func TestDiskHealthSlowAfterSlowWritesInARow(t *testing.T) {
	faults := new(DiskFaults)
	store, health, _ := openWatched(t, 30*time.Millisecond, faults)
	logs := CheckedLogs(store)
	index := uint64(0)
	appendN := func(n int) {
		t.Helper()
		for range n {
			index++
			if err := appendEntry(logs, index); err != nil {
				t.Fatal(err)
			}
		}
	}
	faults.Slow(40 * time.Millisecond)
	appendN(slowWrites - 1)
	faults.Slow(0)
	appendN(1)
	faults.Slow(40 * time.Millisecond)
	appendN(slowWrites - 1)
	if err := health.Slow(); err != nil {
		t.Fatalf("slow after %d slow appends, a fast one, then %d slow: %v", slowWrites-1, slowWrites-1, err)
	}
	appendN(1)
	if err := health.Slow(); !errors.Is(err, ErrLogSlow) {
		t.Fatalf("after %d slow appends in a row: %v, want ErrLogSlow", slowWrites, err)
	}
	if st := health.State(); st.Last < 40*time.Millisecond || st.Failing != nil || st.Slow == nil {
		t.Errorf("state %+v", st)
	}
	faults.Slow(0)
	appendN(slowWrites - 1)
	if health.Slow() == nil {
		t.Fatalf("fast again after %d fast appends", slowWrites-1)
	}
	appendN(1)
	if err := health.Slow(); err != nil {
		t.Fatalf("still slow after %d fast appends: %v", slowWrites, err)
	}
}

// A log that is slow while nothing is appended to it (a follower of an
// idle shard) is found fast again by the probes alone.
func TestDiskHealthProbesASlowLogBackToFast(t *testing.T) {
	faults := new(DiskFaults)
	store, health, _ := openWatched(t, 30*time.Millisecond, faults)
	logs := CheckedLogs(store)
	faults.Slow(40 * time.Millisecond)
	for i := range uint64(slowWrites) {
		if err := appendEntry(logs, i+1); err != nil {
			t.Fatal(err)
		}
	}
	if health.Slow() == nil {
		t.Fatal("not slow")
	}
	faults.Slow(0)
	poll.Until(t, time.Duration(slowWrites+2)*ProbeInterval, "the probes to find the log fast", func() (bool, error) {
		return health.Slow() == nil, health.Slow()
	})
}
