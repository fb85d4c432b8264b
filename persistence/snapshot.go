package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/hashicorp/raft"
)

// A snapshot on disk is framed so that a reader knows what it holds and can
// tell damage from data:
//
//	magic    "RLSNAP"            6 bytes
//	version  uint16, big endian  the payload's format
//	length   uint64, big endian  payload bytes
//	payload                      the shard's state (engine.AppendSnapshot)
//	checksum uint32, big endian  CRC-32C of the payload
//
// The version is the engine's snapshot format (engine.SnapshotFormat), so a
// reader knows how to decode the payload; versions from 1 to
// snapshotVersion are read, a later one is refused.

// snapshotVersion is the latest version this rlserver reads.
const snapshotVersion = 2

const snapshotMagic = "RLSNAP"

// snapshotHead is the length of a frame's head: magic, version, length.
const snapshotHead = 16

// MaxSnapshotSize bounds the payload a reader accepts (16 GiB), so a damaged
// length cannot make it allocate without limit.
const MaxSnapshotSize = 16 << 30

// ErrBadSnapshot reports a snapshot frame that is damaged or of an unknown
// version.
var ErrBadSnapshot = errors.New("bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes payload, of format version, in a snapshot frame.
func WriteSnapshot(w io.Writer, version uint16, payload []byte) error {
	sw, err := NewSnapshotWriter(w, version, uint64(len(payload)))
	if err != nil {
		return err
	}
	if _, err := sw.Write(payload); err != nil {
		return err
	}
	return sw.Close()
}

// ErrSnapshotLength reports a payload written through a SnapshotWriter
// that is not of the length its frame announced.
var ErrSnapshotLength = errors.New("snapshot payload not of its announced length")

// SnapshotWriter writes a snapshot frame whose payload's length is known
// before its bytes are: they are written as they are encoded, never held
// whole (engine.Capture).
type SnapshotWriter struct {
	w    io.Writer
	left uint64 // payload bytes still to come
	sum  uint32
}

// NewSnapshotWriter writes the head of a frame of format version, whose
// payload is length bytes, and returns the writer of the payload.
func NewSnapshotWriter(w io.Writer, version uint16, length uint64) (*SnapshotWriter, error) {
	head := make([]byte, 0, snapshotHead)
	head = append(head, snapshotMagic...)
	head = binary.BigEndian.AppendUint16(head, version)
	head = binary.BigEndian.AppendUint64(head, length)
	if _, err := w.Write(head); err != nil {
		return nil, err
	}
	return &SnapshotWriter{w: w, left: length}, nil
}

// Write writes the next bytes of the payload; more than it announced is
// refused.
func (s *SnapshotWriter) Write(p []byte) (int, error) {
	if uint64(len(p)) > s.left {
		return 0, fmt.Errorf("%w: %d bytes more than announced", ErrSnapshotLength, uint64(len(p))-s.left)
	}
	n, err := s.w.Write(p)
	s.sum = crc32.Update(s.sum, castagnoli, p[:n])
	s.left -= uint64(n)
	return n, err
}

// Close ends the frame with its checksum, once the whole payload is
// written.
func (s *SnapshotWriter) Close() error {
	if s.left != 0 {
		return fmt.Errorf("%w: %d bytes short", ErrSnapshotLength, s.left)
	}
	_, err := s.w.Write(binary.BigEndian.AppendUint32(nil, s.sum))
	return err
}

// ReadSnapshot reads a snapshot frame and returns its checked payload and
// its format version.
func ReadSnapshot(r io.Reader) ([]byte, uint16, error) {
	head := make([]byte, snapshotHead)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, 0, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	if string(head[:6]) != snapshotMagic {
		return nil, 0, fmt.Errorf("%w: not an rlserver snapshot", ErrBadSnapshot)
	}
	version := binary.BigEndian.Uint16(head[6:])
	if version < 1 || version > snapshotVersion {
		return nil, 0, fmt.Errorf("%w: version %d, this rlserver reads versions 1 to %d", ErrBadSnapshot, version, snapshotVersion)
	}
	n := binary.BigEndian.Uint64(head[8:])
	if n > MaxSnapshotSize {
		return nil, 0, fmt.Errorf("%w: payload of %d bytes", ErrBadSnapshot, n)
	}
	payload, err := readPayload(r, n+4)
	if err != nil {
		return nil, 0, err
	}
	sum := binary.BigEndian.Uint32(payload[n:])
	payload = payload[:n]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	return payload, version, nil
}

// sizer is a reader that says how many bytes it holds in all, its head
// included (SnapshotStore.Open's readers do).
type sizer interface{ Size() int64 }

// sizeOf is the size r says it holds (sizer), looked for through raft's
// wrappers too (raft counts the bytes a restore reads through one); -1
// when it says none.
func sizeOf(r io.Reader) int64 {
	for {
		switch v := r.(type) {
		case sizer:
			return v.Size()
		case raft.ReadCloserWrapper:
			r = v.WrappedReadCloser()
		default:
			return -1
		}
	}
}

// readPayload reads the want bytes after a frame's head. A reader that
// says it holds them is read into one buffer of that length. Any other is
// read through a limit, the buffer growing as the bytes come: a damaged
// length must not cost memory the file does not hold.
func readPayload(r io.Reader, want uint64) ([]byte, error) {
	var payload []byte
	var err error
	if size := sizeOf(r); size >= snapshotHead && want <= uint64(size-snapshotHead) {
		payload = make([]byte, want)
		var n int
		n, err = io.ReadFull(r, payload)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			payload, err = payload[:n], nil // shorter than it said: truncated, below
		}
	} else {
		payload, err = io.ReadAll(io.LimitReader(r, int64(want)))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrBadSnapshot, err)
	}
	if uint64(len(payload)) != want {
		return nil, fmt.Errorf("%w: truncated payload", ErrBadSnapshot)
	}
	return payload, nil
}
