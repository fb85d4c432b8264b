package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func TestOpenChecksIdentity(t *testing.T) {
	dir := t.TempDir()
	id := Identity{NodeID: "n1", Shards: 8, Members: []string{"n1@h:1", "n2@h:2", "n3@h:3"}}
	if _, err := Open(dir, id); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, id); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	cases := []struct {
		other      Identity
		field      IdentityField
		have, want string // as %v prints them
	}{
		{Identity{NodeID: "n2", Shards: 8, Members: id.Members}, FieldNodeID, "n1", "n2"},
		{Identity{NodeID: "n1", Shards: 4, Members: id.Members}, FieldShards, "8", "4"},
		// a single node's dir joining a cluster
		{Identity{NodeID: "n1", Shards: 8, Members: []string{"n1"}}, FieldMembers, "[n1@h:1 n2@h:2 n3@h:3]", "[n1]"},
	}
	for _, c := range cases {
		_, err := Open(dir, c.other)
		if !errors.Is(err, ErrIdentityMismatch) {
			t.Errorf("%+v: %v, want ErrIdentityMismatch", c.other, err)
			continue
		}
		var ie *IdentityError
		if !errors.As(err, &ie) || ie.Field != c.field || fmt.Sprint(ie.Have) != c.have || fmt.Sprint(ie.Want) != c.want || ie.Dir != dir {
			t.Errorf("%+v: %#v, want %s of %s: %s, not %s", c.other, err, c.field, dir, c.have, c.want)
			continue
		}
		// The library names its own setting; a program words it as its own.
		if !strings.Contains(err.Error(), string(c.field)) {
			t.Errorf("%q does not name %s", err, c.field)
		}
		flag := ie.Explain(func(f IdentityField) string { return "--flag-" + string(f) })
		if want := strings.Replace(err.Error(), string(c.field), "--flag-"+string(c.field), 1); flag != want {
			t.Errorf("Explain: %q, want %q", flag, want)
		}
	}
}

func TestLogStoreRefusesASecondOpener(t *testing.T) {
	l, err := Open(t.TempDir(), Identity{NodeID: "n1", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := l.ShardDir(0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := OpenLogStore(dir, LogBolt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := OpenLogStore(dir, LogBolt, nil); !errors.Is(err, ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
}

func TestSnapshotFrame(t *testing.T) {
	payload := []byte("shard state \x00\x01\x02")
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, snapshotVersion, payload); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	got, version, err := ReadSnapshot(bytes.NewReader(good))
	if err != nil || !bytes.Equal(got, payload) || version != snapshotVersion {
		t.Fatalf("round trip: %q %d %v", got, version, err)
	}
	var old bytes.Buffer
	WriteSnapshot(&old, 1, payload)
	if _, version, err := ReadSnapshot(&old); err != nil || version != 1 {
		t.Fatalf("version 1: %d %v", version, err)
	}
	var later bytes.Buffer
	WriteSnapshot(&later, snapshotVersion+1, payload)
	if _, _, err := ReadSnapshot(&later); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a later version: %v", err)
	}
	for i := range good {
		damaged := bytes.Clone(good)
		damaged[i] ^= 0x40
		if _, _, err := ReadSnapshot(bytes.NewReader(damaged)); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
		if _, _, err := ReadSnapshot(bytes.NewReader(good[:i])); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

// A payload written in pieces makes the same frame as written at once;
// one longer or shorter than announced is refused.
func TestSnapshotWriterStreams(t *testing.T) {
	payload := []byte("a shard's state, in parts")
	var whole, parts bytes.Buffer
	if err := WriteSnapshot(&whole, snapshotVersion, payload); err != nil {
		t.Fatal(err)
	}
	w, err := NewSnapshotWriter(&parts, snapshotVersion, uint64(len(payload)))
	if err != nil {
		t.Fatal(err)
	}
	for p := payload; len(p) > 0; p = p[min(5, len(p)):] {
		if _, err := w.Write(p[:min(5, len(p))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil || !bytes.Equal(parts.Bytes(), whole.Bytes()) {
		t.Fatalf("in parts: %v, %q against %q", err, parts.Bytes(), whole.Bytes())
	}
	short, _ := NewSnapshotWriter(io.Discard, snapshotVersion, 10)
	short.Write([]byte("12345"))
	if err := short.Close(); !errors.Is(err, ErrSnapshotLength) {
		t.Fatalf("5 bytes of 10: %v", err)
	}
	long, _ := NewSnapshotWriter(io.Discard, snapshotVersion, 4)
	if _, err := long.Write([]byte("12345")); !errors.Is(err, ErrSnapshotLength) {
		t.Fatalf("5 bytes of 4: %v", err)
	}
}

// claimingReader is a frame's bytes behind a reader that says it holds
// size bytes, whatever it holds.
type claimingReader struct {
	*bytes.Reader
	size int64
}

func (r claimingReader) Size() int64 { return r.size }

func (r claimingReader) Close() error { return nil }

// wrapped is a reader in front of another, as raft puts one in front of a
// snapshot's reader to count what a restore reads.
type wrapped struct{ inner io.ReadCloser }

func (w wrapped) Read(p []byte) (int, error)       { return w.inner.Read(p) }
func (w wrapped) Close() error                     { return w.inner.Close() }
func (w wrapped) WrappedReadCloser() io.ReadCloser { return w.inner }

// A reader that says its size is read into one buffer of the payload's
// length; one that says more than it holds, or less, is read as any other:
// a truncated frame is refused either way.
func TestSnapshotReadIntoOneBuffer(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, snapshotVersion, payload); err != nil {
		t.Fatal(err)
	}
	frame := buf.Bytes()
	for _, c := range []struct {
		name   string
		frame  []byte
		claims int
		ok     bool
	}{
		{"its size", frame, len(frame), true},
		{"more than it holds", frame, len(frame) + 1000, true},
		{"less than it holds", frame, len(frame) - 1000, true},
		{"nothing", frame, 0, true},
		{"truncated, claiming its whole size", frame[:len(frame)-100], len(frame), false},
		{"truncated, claiming what it holds", frame[:len(frame)-100], len(frame) - 100, false},
	} {
		got, _, err := ReadSnapshot(claimingReader{bytes.NewReader(c.frame), int64(c.claims)})
		if c.ok != (err == nil) || c.ok && !bytes.Equal(got, payload) {
			t.Errorf("%s: %d bytes, %v", c.name, len(got), err)
		}
		if !c.ok && !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v, want ErrBadSnapshot", c.name, err)
		}
	}
	// Read as it comes, a buffer grown by doubling allocates about twice
	// the payload; read at once, the payload and a little.
	for name, reader := range map[string]func() io.Reader{
		"sized":                   func() io.Reader { return claimingReader{bytes.NewReader(frame), int64(len(frame))} },
		"sized, behind a wrapper": func() io.Reader { return wrapped{claimingReader{bytes.NewReader(frame), int64(len(frame))}} },
	} {
		allocs := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, _, err := ReadSnapshot(reader()); err != nil {
					b.Fatal(err)
				}
			}
		}).AllocedBytesPerOp()
		if allocs > int64(len(payload))+int64(len(payload))/8 {
			t.Errorf("%s: %d bytes allocated to read a payload of %d", name, allocs, len(payload))
		}
	}
}

func FuzzReadSnapshot(f *testing.F) {
	var buf bytes.Buffer
	WriteSnapshot(&buf, snapshotVersion, []byte("payload"))
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		payload, version, err := ReadSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		var again bytes.Buffer
		WriteSnapshot(&again, version, payload)
		if !bytes.Equal(again.Bytes(), b[:again.Len()]) {
			t.Fatal("accepted a frame it would not write")
		}
	})
}

// A snapshot written through the store is written back as it goes (its
// sink found raft's file where raft's file store keeps it: a canary for
// that layout) and reads back whole.
func TestSnapshotStoreWritesBack(t *testing.T) {
	store, err := OpenSnapshotStore(t.TempDir(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := store.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	wb, ok := sink.(*writingBackSink)
	if !ok {
		t.Fatalf("a sink of %T: the snapshot's file is not where raft's file store kept it", sink)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), (2*writeBackStep+100)/16)
	const piece = writeBackStep / 4
	for p := want; len(p) > 0; p = p[min(len(p), piece):] {
		if _, err := sink.Write(p[:min(len(p), piece)]); err != nil {
			t.Fatal(err)
		}
	}
	if wb.synced != 2*writeBackStep {
		t.Errorf("%d bytes written back of %d, want the two whole steps (%d)", wb.synced, len(want), 2*writeBackStep)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	_, rc, err := store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if s, ok := rc.(sizer); !ok || s.Size() != int64(len(want)) {
		t.Errorf("the store's reader (%T) does not say its file's %d bytes", rc, len(want))
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), wrote %d", len(got), err, len(want))
	}
}

// The store keeps the newest snapshotsRetained snapshots and deletes the
// older ones itself once a new one is kept (raft's file store keeps one
// more and never gets to delete one), so that a large file is shrunk
// before it is unlinked.
func TestSnapshotStoreKeepsTheNewestAndReapsTheRest(t *testing.T) {
	dir := t.TempDir()
	store, err := OpenSnapshotStore(dir, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for index := uint64(10); index <= 40; index += 10 {
		sink, err := store.Create(raft.SnapshotVersionMax, index, 1, raft.Configuration{}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sink.Write([]byte("state")); err != nil {
			t.Fatal(err)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sink.ID())
		metas, err := store.List()
		if err != nil {
			t.Fatal(err)
		}
		if want := min(len(ids), snapshotsRetained); len(metas) != want || metas[0].ID != sink.ID() {
			t.Fatalf("after snapshot %d: %d listed, the newest %q; want %d, the newest %q", index, len(metas), metas[0].ID, want, sink.ID())
		}
		for _, old := range ids[:max(len(ids)-snapshotsRetained, 0)] {
			if _, err := os.Stat(filepath.Join(dir, snapshotsDir, old)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after snapshot %d: %s is still there (%v)", index, old, err)
			}
		}
	}
}

// shrink leaves an empty file, whatever its size against the step, and
// takes a file already gone as shrunk.
func TestShrinkEmptiesAFileAStepAtATime(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int64{0, 1, shrinkStep, 3*shrinkStep + 5} {
		path := filepath.Join(dir, "state.bin")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, size); err != nil { // sparse: nothing written
			t.Fatal(err)
		}
		if err := shrink(path); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != 0 {
			t.Fatalf("size %d: after shrink %v, %v", size, st.Size(), err)
		}
	}
	if err := shrink(filepath.Join(dir, "gone")); err != nil {
		t.Errorf("a file already gone: %v", err)
	}
}
