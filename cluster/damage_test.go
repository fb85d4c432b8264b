package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// A node whose Raft log was damaged while it was down refuses to start,
// with an error that says so, whichever entry after its latest snapshot is
// damaged and however. Found by the damaged-log fault test
// (tests/faults_test.go), which saw three behaviours before: a nil pointer
// panic in openGroup's cleanup when NewRaft failed on an undecodable last
// entry; hashicorp/raft's own panic for an undecodable earlier entry; and,
// for one changed byte of a key, a node that started and applied a command
// for another key, holding a state no other replica had.
func TestRaftRefusesADamagedLog(t *testing.T) {
	cases := []struct {
		name string
		// fromEnd picks the entry: 0 the last one naming the key, 1 the one
		// before it.
		fromEnd int
		damage  func([]byte) []byte
	}{
		{"last entry overwritten", 0, func(v []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(v)) }},
		{"last entry cut short", 0, func(v []byte) []byte { return v[:len(v)/2] }},
		{"a byte of the key in the last entry", 0, flipKey},
		{"a byte of the key in an earlier entry", 1, flipKey},
		{"an earlier entry overwritten", 1, func(v []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(v)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := startTestClusterLogs(t, 1, 1, persistence.LogBolt)
			for range 5 {
				if _, err := tc.call(0, 0, sliding("key:ada", 10, 600_000)); err != nil {
					t.Fatal(err)
				}
			}
			tc.crash(0)
			// crash snapshots, kill -9 would not: add entries after the
			// snapshot, as a node killed under load has, for NewRaft to
			// read at start.
			path := filepath.Join(tc.dirs[0], "shards", "000", "raft.db")
			appendEntries(t, path, 2)
			damageEntry(t, path, c.fromEnd, c.damage)
			err := tc.tryStart(0, nil)
			if !errors.Is(err, persistence.ErrDamagedLog) {
				t.Fatalf("start with a damaged log: %v, want an error wrapping ErrDamagedLog", err)
			}
			t.Log(err)
			// rlserver recover reads the group offline, and says the same.
			cfg := DefaultRaftConfig(tc.members[0], 1)
			cfg.Layout, cfg.Shards, cfg.Log = persistence.Layout{Dir: tc.dirs[0]}, tc.shards, slog.New(slog.DiscardHandler)
			if _, err := ReadGroup(cfg, GroupName{Shard: 0}, nil); !errors.Is(err, persistence.ErrDamagedLog) {
				t.Fatalf("reading the damaged group offline: %v, want an error wrapping ErrDamagedLog", err)
			}
		})
	}
}

// The same with the WAL, whose entries rlserver's checksums guard as they
// guard bbolt's: a changed byte of a key in an entry after the latest
// snapshot refuses the start. Except in the last append: raft-wal reads a
// frame that does not check out at the very end of its log as an append a
// crash tore before its fsync (so never acknowledged), and drops it, as a
// crash would have.
func TestRaftRefusesADamagedWAL(t *testing.T) {
	for _, fromEnd := range []int{1, 0} {
		tc := startTestClusterLogs(t, 1, 1, persistence.LogWAL)
		for range 5 {
			if _, err := tc.call(0, 0, sliding("key:ada", 10, 600_000)); err != nil {
				t.Fatal(err)
			}
		}
		tc.crash(0)
		dir := filepath.Join(tc.dirs[0], "shards", "000")
		if got, err := persistence.StoredLogFormat(dir); got != persistence.LogWAL || err != nil {
			t.Fatalf("the shard's log: %v, %v; want the WAL", got, err)
		}
		appendEntriesIn(t, dir, persistence.LogWAL, 2)
		appended := lastIndexIn(t, dir)
		segments, err := filepath.Glob(filepath.Join(persistence.WALPath(dir), "*.wal"))
		if err != nil || len(segments) != 1 {
			t.Fatalf("segments %v, %v: want one", segments, err)
		}
		b, err := os.ReadFile(segments[0])
		if err != nil {
			t.Fatal(err)
		}
		i := len(b)
		for range fromEnd + 1 {
			i = bytes.LastIndex(b[:i], []byte("key:ada"))
		}
		b[i+6] ^= 1
		if err := os.WriteFile(segments[0], b, 0o600); err != nil {
			t.Fatal(err)
		}
		if fromEnd == 0 {
			if last := lastIndexIn(t, dir); last != appended-1 {
				t.Fatalf("the last append damaged: the log ends at %d, want %d (the append dropped)", last, appended-1)
			}
			continue
		}
		err = tc.tryStart(0, nil)
		if !errors.Is(err, persistence.ErrDamagedLog) {
			t.Fatalf("entry %d from the end damaged: start: %v, want an error wrapping ErrDamagedLog", fromEnd, err)
		}
		t.Log(err)
	}
}

// lastIndexIn is the last index of the WAL of the group in dir.
func lastIndexIn(t *testing.T, dir string) uint64 {
	t.Helper()
	store, err := persistence.OpenLogStore(dir, persistence.LogWAL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	last, err := store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// flipKey changes one byte of the key "key:ada" in a stored entry.
func flipKey(v []byte) []byte {
	i := bytes.LastIndex(v, []byte("key:ada"))
	v[i+6] ^= 1
	return v
}

// damageEntry changes the stored bytes of an entry naming "key:ada" in the
// log store at path: the last such entry, or fromEnd entries before it.
func damageEntry(t *testing.T, path string, fromEnd int, damage func([]byte) []byte) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		logs := tx.Bucket([]byte("logs"))
		c := logs.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if !bytes.Contains(v, []byte("key:ada")) {
				continue
			}
			if fromEnd > 0 {
				fromEnd--
				continue
			}
			return logs.Put(bytes.Clone(k), damage(bytes.Clone(v)))
		}
		return errors.New("no entry to damage")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// appendEntries appends n committed-looking entries naming "key:ada" to the
// log store at path, in its last entry's term, checksummed as a node stores
// them.
func appendEntries(t *testing.T, path string, n int) {
	t.Helper()
	appendEntriesIn(t, filepath.Dir(path), persistence.LogBolt, n)
}

// appendEntriesIn is appendEntries for the log store of the group in dir,
// in format.
func appendEntriesIn(t *testing.T, dir string, format persistence.LogFormat, n int) {
	t.Helper()
	store, err := persistence.OpenLogStore(dir, format, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := persistence.CheckedLogs(store)
	last, err := logs.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var tail raft.Log
	if err := logs.GetLog(last, &tail); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := &Request{Cmds: []engine.Command{sliding("key:ada", 10, 600_000)}}
		l := &raft.Log{Index: last + uint64(i) + 1, Term: tail.Term, Type: raft.LogCommand, Data: appendBatch(nil, 1000, []*Request{r})}
		if err := logs.StoreLog(l); err != nil {
			t.Fatal(err)
		}
	}
}
