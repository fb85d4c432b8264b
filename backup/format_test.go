package backup

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// sample is a backup of three shards, the middle one empty.
func sample(t *testing.T) ([]byte, [][]byte) {
	t.Helper()
	frames := [][]byte{bytes.Repeat([]byte("shard zero "), 150), {}, []byte("shard two")}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{CreatedMs: 1_700_000_000_000, Shards: 3, Source: "127.0.0.1:6380", Release: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		s := Shard{Shard: i, Index: uint64(100 + i), Term: 3, TimeMs: 1_700_000_000_000 + int64(i), TakenMs: 5, Size: int64(len(f))}
		if err := w.WriteShard(s, bytes.NewReader(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), frames
}

func TestRoundTrip(t *testing.T) {
	file, frames := sample(t)
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); h.Shards != 3 || h.Source != "127.0.0.1:6380" || h.Release != "test" || h.CreatedMs != 1_700_000_000_000 || h.Version != 1 {
		t.Fatalf("header %+v", h)
	}
	for i := 0; ; i++ {
		s, frame, err := r.Next()
		if errors.Is(err, io.EOF) {
			if i != 3 {
				t.Fatalf("%d shards", i)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(frame)
		if err != nil || !bytes.Equal(got, frames[i]) || s.Index != uint64(100+i) || s.Size != int64(len(frames[i])) {
			t.Fatalf("shard %d: %+v, %d bytes, %v", i, s, len(got), err)
		}
	}
	if _, shards, err := Verify(bytes.NewReader(file)); err != nil || len(shards) != 3 || shards[2].TimeMs != 1_700_000_000_002 {
		t.Fatalf("Verify: %v %+v", err, shards)
	}
}

// Every damaged byte and every truncation is refused, saying which.
func TestDamageAndTruncation(t *testing.T) {
	file, _ := sample(t)
	for i := range file {
		damaged := bytes.Clone(file)
		damaged[i] ^= 0x40
		_, _, err := Verify(bytes.NewReader(damaged))
		if !errors.Is(err, ErrBadBackup) {
			t.Fatalf("byte %d damaged: %v", i, err)
		}
	}
	for n := range len(file) {
		_, _, err := Verify(bytes.NewReader(file[:n]))
		if !errors.Is(err, ErrTruncated) && !(n < len(magic) && errors.Is(err, ErrBadBackup)) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
	for _, tt := range []struct {
		name string
		file []byte
		want error
	}{
		{"not a backup", append([]byte("RLSNAP\x00\x02"), file[8:]...), ErrNotBackup},
		{"later version", append(append([]byte(magic), 0, 2), file[10:]...), ErrVersion},
		{"bytes after the trailer", append(bytes.Clone(file), 0), ErrDamaged},
		{"empty", nil, ErrTruncated},
	} {
		if _, _, err := Verify(bytes.NewReader(tt.file)); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestWriterRefusesOutOfOrder(t *testing.T) {
	w, err := NewWriter(io.Discard, Header{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteShard(Shard{Shard: 1}, bytes.NewReader(nil)); err == nil {
		t.Error("shard 1 before shard 0: accepted")
	}
	if err := w.WriteShard(Shard{Shard: 0, Size: 5}, bytes.NewReader([]byte("abc"))); err == nil {
		t.Error("a short frame: accepted")
	}
	if err := w.Close(); err == nil {
		t.Error("Close before every shard: accepted")
	}
}
