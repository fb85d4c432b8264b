package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// ErrDamagedLog reports a Raft log store that does not read back as it was
// written: an entry damaged, or the file cut short.
var ErrDamagedLog = errors.New("the Raft log is damaged")

// StoreLogsTiming is the go-metrics key under which every append to a Raft
// log is timed, fsync included, whatever the store's format.
var StoreLogsTiming = []string{"rlserver", "log", "storeLogs"}

// checksumTag opens the Log.Extensions that carry an entry's checksum: the
// tag, then the CRC-32C of the entry in big-endian order.
const checksumTag = 'c'

// checkedLogs is a raft.LogStore that stores with each entry a checksum of
// its index, term, type and data, and checks it on every read.
type checkedLogs struct {
	Store
}

// CheckedLogs wraps a log store so that a damaged
// entry fails to read, with ErrDamagedLog, instead of being applied. bbolt
// checksums only its meta pages and raft-boltdb stores entries as plain
// msgpack, so a torn page or a flipped bit in an entry otherwise either
// fails to decode or, worse, decodes to another command that this replica
// alone would apply. The checksum goes in the entry's Extensions, which Raft
// leaves to its users (rlserver puts nothing else there), and is taken off
// again on reading; entries stored without one, by an earlier rlserver, are
// read as they are.
func CheckedLogs(store Store) raft.LogStore {
	return checkedLogs{store}
}

// GetLog reads entry index and checks it.
func (c checkedLogs) GetLog(index uint64, l *raft.Log) error {
	if err := c.Store.GetLog(index, l); err != nil {
		if errors.Is(err, raft.ErrLogNotFound) {
			return err
		}
		return fmt.Errorf("%w: %s, entry %d: %v", ErrDamagedLog, c.Path(), index, err)
	}
	if len(l.Extensions) == 5 && l.Extensions[0] == checksumTag {
		if l.Index != index || binary.BigEndian.Uint32(l.Extensions[1:]) != entrySum(l) {
			return fmt.Errorf("%w: %s, entry %d: checksum mismatch", ErrDamagedLog, c.Path(), index)
		}
		l.Extensions = nil
	}
	return nil
}

// StoreLog stores one entry with its checksum.
func (c checkedLogs) StoreLog(l *raft.Log) error {
	return c.StoreLogs([]*raft.Log{l})
}

// StoreLogs stores entries with their checksums. It stores copies: Raft
// keeps the entries it passes (in its cache, and to send to followers).
func (c checkedLogs) StoreLogs(logs []*raft.Log) error {
	defer metrics.MeasureSince(StoreLogsTiming, time.Now())
	sealed := make([]sealedLog, len(logs)) // the copies and their checksums: one allocation
	ptrs := make([]*raft.Log, len(logs))
	for i, l := range logs {
		s := &sealed[i]
		s.log = *l
		s.sum[0] = checksumTag
		binary.BigEndian.PutUint32(s.sum[1:], entrySum(l))
		s.log.Extensions = s.sum[:]
		ptrs[i] = &s.log
	}
	return c.Store.StoreLogs(ptrs)
}

// sealedLog is an entry as stored: a copy of Raft's, whose Extensions are
// sum, the checksum tag and the checksum.
type sealedLog struct {
	log raft.Log
	sum [5]byte
}

// entrySum is the CRC-32C of what an entry means to Raft and the state
// machine: its index, term, type and data (AppendedAt is only operational).
func entrySum(l *raft.Log) uint32 {
	var head [17]byte
	binary.BigEndian.PutUint64(head[0:], l.Index)
	binary.BigEndian.PutUint64(head[8:], l.Term)
	head[16] = byte(l.Type)
	// The head's 17 bytes through the table, as crc32.Update would: passed
	// to it, the array would escape (its implementation is chosen at run
	// time), an allocation an entry.
	crc := ^uint32(0)
	for _, b := range head {
		crc = castagnoli[byte(crc)^b] ^ crc>>8
	}
	return crc32.Update(^crc, castagnoli, l.Data)
}

// checkLength refuses a log store file shorter than its pages: bbolt maps
// the file and, opening it for writing, walks every page its tree refers
// to, so a file cut short (a lost tail, a partial copy) would fault there
// and kill the process. A read-only open reads only the meta pages, which
// say how far the pages reach. A file that does not exist yet is fine.
func checkLength(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, bbolt.ErrTimeout) {
		return fmt.Errorf("%w: %s", ErrInUse, path)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDamagedLog, path, err)
	}
	defer db.Close()
	tx, err := db.Begin(false)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDamagedLog, path, err)
	}
	defer tx.Rollback()
	if need := tx.Size(); info.Size() < need {
		return fmt.Errorf("%w: %s holds %d bytes, its pages reach %d: the file was cut short", ErrDamagedLog, path, info.Size(), need)
	}
	return nil
}
