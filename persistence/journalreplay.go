package persistence

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// ReplayJournal brings every WAL of dataDir to what its journal records,
// if it has one (a node that ran with a journal and stopped without
// closing it), syncs them and empties the journal. A node without a
// journal, and rlserver recover, call it before they open any group's
// log; OpenJournal runs it itself. It refuses with ErrInUse a journal
// another process holds, and with ErrDamagedLog one that does not read
// back, or that a WAL cannot be brought to.
func ReplayJournal(dataDir string, logger hclog.Logger) error {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	dir := journalDir(dataDir)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	lock, err := lockJournal(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	_, err = replayLocked(dataDir, logger)
	return err
}

// replayLocked replays the journal in dataDir, whose lock the caller
// holds, and deletes its segments; it returns the last segment's number
// (0 when there was none).
func replayLocked(dataDir string, logger hclog.Logger) (uint64, error) {
	dir := journalDir(dataDir)
	seqs, err := segments(dir)
	if err != nil || len(seqs) == 0 {
		return 0, err
	}
	var order []string
	wals := make(map[string]*walReplay)
	for i, seq := range seqs {
		path := filepath.Join(dir, segmentName(seq))
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("read the journal: %w", err)
		}
		for off := 0; off < len(b); {
			rec, n, err := nextRecord(b[off:])
			if errors.Is(err, errTorn) && i == len(seqs)-1 {
				logger.Warn("the journal ends in a write cut short; it was never acknowledged", "file", path, "offset", off)
				break
			}
			if err != nil {
				return 0, fmt.Errorf("%w: journal %s at offset %d: %v", ErrDamagedLog, path, off, err)
			}
			if n == 0 {
				break
			}
			off += n
			w := wals[rec.wal]
			if w == nil {
				w = &walReplay{cut: math.MaxUint64}
				wals[rec.wal] = w
				order = append(order, rec.wal)
			}
			if err := w.add(rec); err != nil {
				return 0, fmt.Errorf("%w: journal %s, %s: %v", ErrDamagedLog, path, rec.wal, err)
			}
		}
	}
	for _, name := range order {
		w := wals[name]
		if w.cut == math.MaxUint64 {
			continue // nothing since its last sync
		}
		path := filepath.Join(dataDir, filepath.FromSlash(name))
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue // a replica removed since
		}
		if err := replayInto(path, w, logger); err != nil {
			return 0, err
		}
		logger.Info("replayed the journal into a WAL", "wal", path, "entries", len(w.logs))
	}
	return seqs[len(seqs)-1], removeSegmentsBefore(dir, seqs[len(seqs)-1]+1)
}

// walReplay is what the journal says of one WAL: from index cut on, its
// log is exactly logs (contiguous; empty when the tail was dropped), and
// below cut it is as the WAL's synced files hold it. cut is MaxUint64
// while the journal has nothing the WAL may lack.
type walReplay struct {
	logs []*raft.Log
	cut  uint64
}

// add applies one record, as the WAL applied the call it records.
func (w *walReplay) add(rec journalRecord) error {
	switch rec.kind {
	case recordDurable:
		w.logs, w.cut = nil, math.MaxUint64
	case recordTruncate:
		w.truncate(rec.last)
		w.cut = min(w.cut, rec.last+1)
	case recordAppend:
		if len(rec.logs) == 0 {
			return nil
		}
		for i := 1; i < len(rec.logs); i++ {
			if rec.logs[i].Index != rec.logs[i-1].Index+1 {
				return fmt.Errorf("entries %d and %d appended together", rec.logs[i-1].Index, rec.logs[i].Index)
			}
		}
		first := rec.logs[0].Index
		if n := len(w.logs); n > 0 {
			switch last := w.logs[n-1].Index; {
			case first <= last:
				w.truncate(first - 1)
			case first > last+1:
				w.logs = nil // the log was reset (a snapshot installed): the entries before are gone
			}
		}
		w.logs = append(w.logs, rec.logs...)
		w.cut = min(w.cut, first)
	}
	return nil
}

// truncate keeps the entries up to last.
func (w *walReplay) truncate(last uint64) {
	for len(w.logs) > 0 && w.logs[len(w.logs)-1].Index > last {
		w.logs = w.logs[:len(w.logs)-1]
	}
}

// replayBatch bounds the entries stored in one call during a replay.
const replayBatch = 256

// replayInto opens the WAL at path (synced as it always is) and brings it
// to w: its entries from w.cut on (or from its first, if later) are
// dropped and w's stored in their place, then it is closed, synced.
func replayInto(path string, w *walReplay, logger hclog.Logger) (err error) {
	st, err := openWAL(path, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	first, err := st.FirstIndex()
	if err != nil {
		return err
	}
	last, err := st.LastIndex()
	if err != nil {
		return err
	}
	from := max(w.cut, first, 1)
	if last != 0 && last >= from {
		if err := st.DeleteRange(from, last); err != nil {
			return fmt.Errorf("replay the journal into %s: %w", path, err)
		}
		last = from - 1
		if from == first {
			last = 0 // emptied: the next entry may start anywhere
		}
	}
	logs := w.logs
	for len(logs) > 0 && logs[0].Index < from {
		logs = logs[1:]
	}
	if len(logs) > 0 && last != 0 && logs[0].Index != last+1 {
		return fmt.Errorf("%w: %s ends at entry %d and its journal goes on from %d", ErrDamagedLog, path, last, logs[0].Index)
	}
	for len(logs) > 0 {
		n := min(len(logs), replayBatch)
		if err := st.StoreLogs(logs[:n]); err != nil {
			return fmt.Errorf("replay the journal into %s: %w", path, err)
		}
		logs = logs[n:]
	}
	return nil
}

// syncDir syncs a directory, so that the names created or removed in it
// survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
