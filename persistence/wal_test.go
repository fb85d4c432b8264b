package persistence

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// storeEntries stores entries first..last, of 1,000 bytes each, in logs.
func storeEntries(t *testing.T, logs raft.LogStore, first, last uint64) {
	t.Helper()
	for i := first; i <= last; i++ {
		if err := logs.StoreLog(&raft.Log{Index: i, Term: 1, Data: bytes.Repeat([]byte{byte(i)}, 1000)}); err != nil {
			t.Fatal(err)
		}
	}
}

// openTestLogs opens the log store in dir (a new one in format), closed on
// cleanup.
func openTestLogs(t *testing.T, dir string, format LogFormat) Store {
	t.Helper()
	store, err := OpenLogStore(dir, format, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// A directory's log keeps the format it was created in, whatever a new one
// would get: a data directory of a release before the WAL keeps its bbolt
// logs, with everything in them.
func TestLogStoreKeepsItsFormat(t *testing.T) {
	for _, created := range []LogFormat{LogWAL, LogBolt} {
		dir := t.TempDir()
		if got, err := StoredLogFormat(dir); got != LogNone || err != nil {
			t.Fatalf("empty directory: %v, %v", got, err)
		}
		store := openTestLogs(t, dir, created)
		storeEntries(t, CheckedLogs(store), 1, 10)
		if err := store.SetUint64([]byte("CurrentTerm"), 7); err != nil {
			t.Fatal(err)
		}
		store.Close()
		for _, newStore := range []LogFormat{LogWAL, LogBolt} {
			if got, err := StoredLogFormat(dir); got != created || err != nil {
				t.Fatalf("created as %v: stored format %v, %v", created, got, err)
			}
			store := openTestLogs(t, dir, newStore)
			logs := CheckedLogs(store)
			var l raft.Log
			if last, err := logs.LastIndex(); last != 10 || err != nil {
				t.Fatalf("created as %v, opened with %v for new stores: last index %d, %v", created, newStore, last, err)
			}
			if err := logs.GetLog(10, &l); err != nil || !bytes.Equal(l.Data, bytes.Repeat([]byte{10}, 1000)) {
				t.Fatalf("created as %v: entry 10 %+v, %v", created, l, err)
			}
			if term, err := store.GetUint64([]byte("CurrentTerm")); term != 7 || err != nil {
				t.Fatalf("created as %v: term %d, %v", created, term, err)
			}
			store.Close()
		}
	}
}

// A directory holding both formats is refused: which holds the votes and
// entries cannot be told.
func TestLogStoreRefusesTwoFormats(t *testing.T) {
	dir := t.TempDir()
	openTestLogs(t, dir, LogBolt).Close()
	if err := os.MkdirAll(WALPath(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLogStore(dir, LogWAL, hclog.NewNullLogger()); !errors.Is(err, ErrDamagedLog) {
		t.Fatalf("open: %v, want ErrDamagedLog", err)
	}
}

func TestWALRefusesASecondOpener(t *testing.T) {
	dir := t.TempDir()
	openTestLogs(t, dir, LogWAL)
	if store, err := OpenLogStore(dir, LogBolt, hclog.NewNullLogger()); !errors.Is(err, ErrInUse) {
		if err == nil {
			store.Close()
		}
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
}

// Raft must see that the WAL refuses gaps through the checksums and its
// cache (raft.MonotonicLogStore), or installing a snapshot would leave a
// gap the WAL refuses to append after.
func TestWALIsMonotonicThroughTheWrappers(t *testing.T) {
	for _, c := range []struct {
		format LogFormat
		want   bool
	}{{LogWAL, true}, {LogBolt, false}} {
		store := openTestLogs(t, t.TempDir(), c.format)
		cache, err := raft.NewLogCache(16, CheckedLogs(store))
		if err != nil {
			t.Fatal(err)
		}
		if got := cache.IsMonotonic(); got != c.want {
			t.Errorf("%v: IsMonotonic %v, want %v", c.format, got, c.want)
		}
	}
}

// An entry of the WAL damaged on disk fails to read with ErrDamagedLog:
// rlserver's checksum finds it (raft-wal checks frames only at the end of
// its log, where a crash may have torn an append).
func TestWALDamagedEntry(t *testing.T) {
	dir := t.TempDir()
	store := openTestLogs(t, dir, LogWAL)
	storeEntries(t, CheckedLogs(store), 1, 200)
	store.Close()
	segments, err := filepath.Glob(filepath.Join(WALPath(dir), "*.wal"))
	if err != nil || len(segments) != 1 {
		t.Fatalf("segments %v, %v: want one", segments, err)
	}
	b, err := os.ReadFile(segments[0])
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, bytes.Repeat([]byte{100}, 1000))+500] ^= 1
	if err := os.WriteFile(segments[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := CheckedLogs(openTestLogs(t, dir, LogWAL))
	var l raft.Log
	if err := logs.GetLog(99, &l); err != nil {
		t.Fatalf("entry 99: %v", err)
	}
	if err := logs.GetLog(100, &l); !errors.Is(err, ErrDamagedLog) {
		t.Fatalf("entry 100: %v, want ErrDamagedLog", err)
	}
}

func TestParseLogFormat(t *testing.T) {
	for _, f := range []LogFormat{LogWAL, LogBolt} {
		if got, err := ParseLogFormat(f.String()); got != f || err != nil {
			t.Errorf("%v: %v, %v", f, got, err)
		}
	}
	if _, err := ParseLogFormat("leveldb"); err == nil {
		t.Error("leveldb: no error")
	}
	if DefaultLogFormat != LogWAL {
		t.Errorf("default %v", DefaultLogFormat)
	}
}

// Raft empties a WAL when it installs a snapshot (the store is monotonic)
// and appends after the snapshot's index: an empty WAL takes any index,
// one that is not empty refuses a gap (Raft never asks for one).
func TestWALAppendsAfterAnEmptyingDelete(t *testing.T) {
	dir := t.TempDir()
	store := openTestLogs(t, dir, LogWAL)
	storeEntries(t, store, 1, 100)
	if err := store.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	if err := store.StoreLog(&raft.Log{Index: 500, Term: 2, Data: []byte("after a snapshot")}); err != nil {
		t.Fatalf("append after the snapshot's index into an emptied WAL: %v", err)
	}
	if first, err := store.FirstIndex(); first != 500 || err != nil {
		t.Fatalf("first index %d, %v; want 500", first, err)
	}
	if err := store.StoreLog(&raft.Log{Index: 700, Term: 2}); err == nil {
		t.Fatal("a gap after 500 was taken")
	}
}
