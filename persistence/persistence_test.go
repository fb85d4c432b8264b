package persistence

import (
	"bytes"
	"errors"
	"testing"
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
	for _, other := range []Identity{
		{NodeID: "n2", Shards: 8, Members: id.Members},
		{NodeID: "n1", Shards: 4, Members: id.Members},
		{NodeID: "n1", Shards: 8, Members: []string{"n1"}}, // a single node's dir joining a cluster
		{NodeID: "n1", Shards: 8, Members: []string{"n1@h:1", "n2@h:2", "n4@h:4"}},
	} {
		if _, err := Open(dir, other); !errors.Is(err, ErrIdentityMismatch) {
			t.Errorf("%+v: %v, want ErrIdentityMismatch", other, err)
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
	first, err := OpenLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := OpenLogStore(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
}

func TestSnapshotFrame(t *testing.T) {
	payload := []byte("shard state \x00\x01\x02")
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, SnapshotVersion, payload); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	got, version, err := ReadSnapshot(bytes.NewReader(good))
	if err != nil || !bytes.Equal(got, payload) || version != SnapshotVersion {
		t.Fatalf("round trip: %q %d %v", got, version, err)
	}
	var old bytes.Buffer
	WriteSnapshot(&old, 1, payload)
	if _, version, err := ReadSnapshot(&old); err != nil || version != 1 {
		t.Fatalf("version 1: %d %v", version, err)
	}
	var later bytes.Buffer
	WriteSnapshot(&later, SnapshotVersion+1, payload)
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

func FuzzReadSnapshot(f *testing.F) {
	var buf bytes.Buffer
	WriteSnapshot(&buf, SnapshotVersion, []byte("payload"))
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
