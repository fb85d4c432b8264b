package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
)

// A journal segment is a run of records, each framed as
//
//	crc     uint32  CRC-32C of length and payload, little endian
//	length  uint32  of the payload, little endian
//	payload         kind byte, the WAL's directory (uvarint length, bytes,
//	                relative to the data directory), then by kind:
//	                  recordAppend: uvarint count, then each entry as
//	                    index, term (uvarints), type byte, appended-at
//	                    (varint, Unix ns), data, extensions (uvarint
//	                    length, bytes)
//	                  recordTruncate: uvarint, the last index kept
//	                  recordDurable: nothing
//
// A segment is written only by appending, each write synced before any of
// its records is acknowledged and before the next write begins, so a crash
// can tear only the last segment's last write: reading stops at the first
// record that is cut short or fails its checksum (or at zeros, a length of
// 0), and what follows it was never acknowledged.

const (
	recordAppend   byte = 1 // entries appended to a WAL
	recordTruncate byte = 2 // a WAL's tail dropped
	recordDurable  byte = 3 // every earlier record of that WAL is in its synced files
)

// recordHeader is the crc and length before each record's payload.
const recordHeader = 8

// maxRecord bounds a record's payload: an entry of Raft is at most a few
// MiB (rlserver's batches are bounded far below), and a length beyond this
// is damage, not a record to allocate for.
const maxRecord = 256 << 20

// errTorn reports a record cut short or failing its checksum.
var errTorn = errors.New("torn or damaged journal record")

// journalRecord is a record as replay reads it.
type journalRecord struct {
	kind byte
	wal  string      // the WAL's directory, relative to the data directory
	logs []*raft.Log // recordAppend
	last uint64      // recordTruncate: the last index kept
}

// beginRecord appends a record's header, to be completed by endRecord, and
// its kind and WAL to buf; it returns buf and the header's offset.
func beginRecord(buf []byte, kind byte, wal string) ([]byte, int) {
	at := len(buf)
	buf = append(buf, make([]byte, recordHeader)...)
	buf = append(buf, kind)
	buf = binary.AppendUvarint(buf, uint64(len(wal)))
	return append(buf, wal...), at
}

// endRecord fills in the header of the record that begins at at.
func endRecord(buf []byte, at int) []byte {
	payload := buf[at+recordHeader:]
	binary.LittleEndian.PutUint32(buf[at+4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[at:], crc32.Update(crc32.Checksum(buf[at+4:at+8], castagnoli), castagnoli, payload))
	return buf
}

// appendLogsRecord appends a recordAppend of logs to buf.
func appendLogsRecord(buf []byte, wal string, logs []*raft.Log) []byte {
	buf, at := beginRecord(buf, recordAppend, wal)
	buf = binary.AppendUvarint(buf, uint64(len(logs)))
	for _, l := range logs {
		buf = binary.AppendUvarint(buf, l.Index)
		buf = binary.AppendUvarint(buf, l.Term)
		buf = append(buf, byte(l.Type))
		var at int64
		if !l.AppendedAt.IsZero() {
			at = l.AppendedAt.UnixNano()
		}
		buf = binary.AppendVarint(buf, at)
		buf = binary.AppendUvarint(buf, uint64(len(l.Data)))
		buf = append(buf, l.Data...)
		buf = binary.AppendUvarint(buf, uint64(len(l.Extensions)))
		buf = append(buf, l.Extensions...)
	}
	return endRecord(buf, at)
}

// appendTruncateRecord appends a recordTruncate to buf: wal keeps its
// entries up to last.
func appendTruncateRecord(buf []byte, wal string, last uint64) []byte {
	buf, at := beginRecord(buf, recordTruncate, wal)
	buf = binary.AppendUvarint(buf, last)
	return endRecord(buf, at)
}

// appendDurableRecord appends a recordDurable to buf.
func appendDurableRecord(buf []byte, wal string) []byte {
	buf, at := beginRecord(buf, recordDurable, wal)
	return endRecord(buf, at)
}

// nextRecord decodes the record at the start of b and returns it with its
// length, header included. The end of the records (no bytes left, or
// zeros: a file extended but not written) is n == 0 with a nil error; a
// record cut short or failing its checksum is errTorn.
func nextRecord(b []byte) (journalRecord, int, error) {
	if allZero(b[:min(len(b), recordHeader)]) {
		return journalRecord{}, 0, nil
	}
	if len(b) < recordHeader {
		return journalRecord{}, 0, errTorn
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if n > maxRecord || uint64(len(b)-recordHeader) < uint64(n) {
		return journalRecord{}, 0, errTorn
	}
	payload := b[recordHeader : recordHeader+int(n)]
	if crc32.Update(crc32.Checksum(b[4:8], castagnoli), castagnoli, payload) != binary.LittleEndian.Uint32(b) {
		return journalRecord{}, 0, errTorn
	}
	r, err := decodePayload(payload)
	if err != nil {
		// The checksum held, so the record was written so: not a tear.
		return journalRecord{}, 0, err
	}
	return r, recordHeader + int(n), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// payloadReader reads a record's payload; the first error sticks.
type payloadReader struct {
	b   []byte
	err error
}

func (r *payloadReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *payloadReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *payloadReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errors.New("length beyond the record")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *payloadReader) byte() byte {
	if r.err == nil && len(r.b) == 0 {
		r.err = errors.New("record cut short")
	}
	if r.err != nil {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// decodePayload decodes a record's payload; entries' bytes alias it.
func decodePayload(b []byte) (journalRecord, error) {
	r := payloadReader{b: b}
	rec := journalRecord{kind: r.byte()}
	rec.wal = string(r.bytes())
	switch rec.kind {
	case recordAppend:
		count := r.uvarint()
		if count > uint64(len(b)) { // every entry takes bytes
			return rec, fmt.Errorf("journal record of %d entries in %d bytes", count, len(b))
		}
		rec.logs = make([]*raft.Log, 0, count)
		for range count {
			l := &raft.Log{Index: r.uvarint(), Term: r.uvarint(), Type: raft.LogType(r.byte())}
			if ns := r.varint(); ns != 0 {
				l.AppendedAt = time.Unix(0, ns)
			}
			l.Data, l.Extensions = r.bytes(), r.bytes()
			if len(l.Data) == 0 {
				l.Data = nil
			}
			if len(l.Extensions) == 0 {
				l.Extensions = nil
			}
			rec.logs = append(rec.logs, l)
		}
	case recordTruncate:
		rec.last = r.uvarint()
	case recordDurable:
	default:
		return rec, fmt.Errorf("journal record of unknown kind %d", rec.kind)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("bytes after the record")
	}
	if r.err != nil {
		return rec, fmt.Errorf("journal record: %w", r.err)
	}
	return rec, nil
}
