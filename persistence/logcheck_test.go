package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"testing"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// Found by the damaged-log fault test (tests/faults_test.go): one byte of a
// key changed in a stored entry still decoded, to a command for another
// key, which the restarted replica applied alone, so its state differed
// from the others' for good. Every kind of damage to a stored entry now
// fails to read with ErrDamagedLog; intact entries, and entries stored
// without a checksum by an earlier rlserver, read back as they were.
func TestCheckedLogsRefuseDamagedEntries(t *testing.T) {
	dir := t.TempDir()
	entry := func(i uint64) *raft.Log {
		return &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: []byte("\x01batch for key:ada")}
	}
	cases := []struct {
		name   string
		damage func(v []byte) []byte // of entry 2's stored bytes; nil: intact
	}{
		{"intact", nil},
		{"a byte of a key changed", func(v []byte) []byte {
			i := bytes.Index(v, []byte("key:ada"))
			v[i+6] ^= 1
			return v
		}},
		{"cut short", func(v []byte) []byte { return v[:len(v)/2] }},
		{"overwritten", func(v []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(v)) }},
		{"the checksum changed", func(v []byte) []byte {
			sum := binary.BigEndian.AppendUint32([]byte{checksumTag}, entrySum(entry(2)))
			i := bytes.Index(v, sum)
			if i < 0 {
				t.Fatal("no checksum in the stored entry")
			}
			v[i+1] ^= 1
			return v
		}},
	}
	for _, c := range cases {
		path := dir + "/" + c.name + ".db"
		store := openTestStore(t, path)
		logs := CheckedLogs(store)
		if err := logs.StoreLogs([]*raft.Log{entry(1), entry(2)}); err != nil {
			t.Fatal(err)
		}
		if err := store.StoreLog(entry(3)); err != nil { // no checksum: an earlier rlserver's
			t.Fatal(err)
		}
		store.Close()
		if c.damage != nil {
			changeStored(t, path, 2, c.damage)
		}
		store = openTestStore(t, path)
		logs = CheckedLogs(store)
		for i := uint64(1); i <= 3; i++ {
			var got raft.Log
			err := logs.GetLog(i, &got)
			switch damaged := c.damage != nil && i == 2; {
			case damaged && !errors.Is(err, ErrDamagedLog):
				t.Errorf("%s: entry %d read with %v, want ErrDamagedLog", c.name, i, err)
			case !damaged && (err != nil || got.Index != i || !bytes.Equal(got.Data, entry(i).Data) || got.Extensions != nil):
				t.Errorf("%s: entry %d read as %+v, %v", c.name, i, got, err)
			}
		}
		store.Close()
	}
}

// Found by the damaged-log fault test (tests/faults_test.go): a log store
// file cut short made bbolt fault while opening it (SIGBUS: "unexpected
// fault address"), killing the process with a runtime trace. It is refused
// with ErrDamagedLog.
func TestLogStoreRefusesAFileCutShort(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenLogStore(dir, LogBolt, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := CheckedLogs(store)
	for i := uint64(1); i <= 200; i++ {
		if err := logs.StoreLog(&raft.Log{Index: i, Term: 1, Data: bytes.Repeat([]byte{byte(i)}, 1000)}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	info, err := os.Stat(logStorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logStorePath(dir), info.Size()/2+1234); err != nil {
		t.Fatal(err)
	}
	if store, err := OpenLogStore(dir, LogBolt, nil); !errors.Is(err, ErrDamagedLog) {
		if err == nil {
			store.Close()
		}
		t.Fatalf("open a file cut short: %v, want ErrDamagedLog", err)
	}
}

// openTestStore opens a log store file for the test, closed on cleanup.
func openTestStore(t *testing.T, path string) Store {
	t.Helper()
	store, err := openLogStoreAt(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// changeStored rewrites the stored bytes of entry index.
func changeStored(t *testing.T, path string, index uint64, change func([]byte) []byte) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		logs := tx.Bucket([]byte("logs"))
		key := []byte{0, 0, 0, 0, 0, 0, 0, byte(index)}
		return logs.Put(key, change(bytes.Clone(logs.Get(key))))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// entrySum is the checksum entries were stored with by every release: the
// CRC-32C of the head (index, term, type) and then the data, as
// crc32.Checksum and crc32.Update compute it. A different sum would refuse
// every stored entry.
func TestEntrySumIsTheStoredChecksum(t *testing.T) {
	for i, l := range []raft.Log{
		{},
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")},
		{Index: 1<<64 - 1, Term: 1<<63 + 5, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{0xa5}, 1000)},
		{Index: 123_456_789, Term: 42, Type: raft.LogNoop},
	} {
		var head [17]byte
		binary.BigEndian.PutUint64(head[0:], l.Index)
		binary.BigEndian.PutUint64(head[8:], l.Term)
		head[16] = byte(l.Type)
		want := crc32.Update(crc32.Checksum(head[:], crc32.MakeTable(crc32.Castagnoli)), crc32.MakeTable(crc32.Castagnoli), l.Data)
		if got := entrySum(&l); got != want {
			t.Errorf("entry %d: sum %#x, want %#x", i, got, want)
		}
	}
	l := raft.Log{Index: 7, Term: 3, Data: []byte("decision")}
	if allocs := testing.AllocsPerRun(100, func() { entrySum(&l) }); allocs != 0 {
		t.Errorf("%v allocations a sum, want none", allocs)
	}
}
