package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// A snapshot on disk is framed so that a reader knows what it holds and can
// tell damage from data:
//
//	magic    "RLSNAP"            6 bytes
//	version  uint16, big endian  SnapshotVersion
//	length   uint64, big endian  payload bytes
//	payload                      the shard's state (engine.AppendSnapshot)
//	checksum uint32, big endian  CRC-32C of the payload

// SnapshotVersion is the frame's version; a later one is refused.
const SnapshotVersion = 1

const snapshotMagic = "RLSNAP"

// MaxSnapshotSize bounds the payload a reader accepts (16 GiB), so a damaged
// length cannot make it allocate without limit.
const MaxSnapshotSize = 16 << 30

// ErrBadSnapshot reports a snapshot frame that is damaged or of an unknown
// version.
var ErrBadSnapshot = errors.New("bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes payload in a snapshot frame.
func WriteSnapshot(w io.Writer, payload []byte) error {
	head := make([]byte, 0, 16)
	head = append(head, snapshotMagic...)
	head = binary.BigEndian.AppendUint16(head, SnapshotVersion)
	head = binary.BigEndian.AppendUint64(head, uint64(len(payload)))
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(payload, castagnoli)))
	return err
}

// ReadSnapshot reads a snapshot frame and returns its checked payload.
func ReadSnapshot(r io.Reader) ([]byte, error) {
	head := make([]byte, 16)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	if string(head[:6]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not an rlserver snapshot", ErrBadSnapshot)
	}
	if v := binary.BigEndian.Uint16(head[6:]); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, this rlserver reads version %d", ErrBadSnapshot, v, SnapshotVersion)
	}
	n := binary.BigEndian.Uint64(head[8:])
	if n > MaxSnapshotSize {
		return nil, fmt.Errorf("%w: payload of %d bytes", ErrBadSnapshot, n)
	}
	// Read through a limit rather than allocating n up front: a damaged
	// length must not cost memory the file does not hold.
	payload, err := io.ReadAll(io.LimitReader(r, int64(n)+4))
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrBadSnapshot, err)
	}
	if uint64(len(payload)) != n+4 {
		return nil, fmt.Errorf("%w: truncated payload", ErrBadSnapshot)
	}
	sum := binary.BigEndian.Uint32(payload[n:])
	payload = payload[:n]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	return payload, nil
}
