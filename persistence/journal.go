package persistence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics/compat"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// A node's shards each keep their own Raft log (one WAL a group), and each
// append to each log was synced on its own: with many shards active at
// once a node made as many fsyncs as appends, and on a disk where an fsync
// costs 0.2 ms of waiting and a good deal of CPU that, not the work, was
// what a spread load hit (docs/performance.md, "One journal a node").
//
// With a Journal, a group's WAL writes its appends without syncing them,
// and the same entries go to the node's journal, one file that every group
// appends to: appends that arrive while a sync is under way are written
// and synced together by the next, so a node makes one fsync for all the
// appends of all its groups that coincide. An append returns once its
// journal record is synced; its WAL's copy is made durable later, at a
// checkpoint, when the journal starts a new segment and every WAL's files
// written since are synced, after which the old segments hold nothing that
// is not durable elsewhere and are deleted. Anything a WAL does besides
// appending (a segment sealed, its log's head or tail dropped) commits
// raft-wal's metadata, and the WAL's files are synced before that commit,
// so the metadata never refers to data that is not on disk.
//
// After a crash, ReplayJournal (which OpenJournal runs first) reads what
// the journal holds, opens each WAL it names, and brings it to the state
// the journal records, entry for entry; then it syncs them and empties the
// journal. A WAL's own recovery has already cut any write that did not
// fully reach the disk, so the WALs and the journal agree on what was
// acknowledged. A data directory is opened only after that, by a node,
// with a journal or without, or by rlserver recover.

// journalDirName is the journal's directory in the data directory.
const journalDirName = "journal"

// Checkpoints: a new segment is started, and the old ones deleted, once
// the segment holds journalSegmentBytes, or has been written for
// journalCheckpointEvery. The journal a crash leaves (what a restart
// replays) is at most about one segment and one checkpoint's WAL syncs.
const (
	journalSegmentBytes    = 64 << 20
	journalCheckpointEvery = 5 * time.Second
	journalCheckpointCheck = 250 * time.Millisecond
)

// Journal is a node's journal of Raft log appends (see above). Its methods
// are safe for concurrent use.
type Journal struct {
	dataDir, dir string
	log          hclog.Logger
	lock         *os.File

	mu      sync.Mutex
	cond    sync.Cond
	pending []byte // records waiting to be written, batch queued+1
	waiting int    // the appends pending holds
	spare   []byte // a buffer for the next batch's records
	writing bool   // a caller writes and syncs a batch
	// rotating holds new batches back while a checkpoint starts a segment:
	// under appends that never pause, it would otherwise wait for a turn
	// among them, and the segment grow meanwhile.
	rotating bool
	queued   uint64 // batches taken for writing
	synced   uint64 // the last batch synced
	failed   error  // a write or sync failed: every append fails from then on
	file     *os.File
	seq      uint64    // file's segment number
	size     int64     // file's length
	started  time.Time // when file was created
	wals     map[*journaledStore]struct{}
	closed   bool

	stop, done chan struct{}
	// vfs is the file system of the WALs' segments: raft-wal's own, but
	// in tests that lose what was not synced.
	vfs func() types.VFS

	syncs, appends atomic.Uint64
}

// JournalSyncTiming is the go-metrics key under which each journal write
// and its sync are timed; JournalBatchSample the key of the count of log
// appends each made durable.
var (
	JournalSyncTiming  = []string{"rlserver", "journal", "sync"}
	JournalBatchSample = []string{"rlserver", "journal", "batch"}
)

// JournalStats are a journal's counters since it was opened.
type JournalStats struct {
	Syncs   uint64 // journal writes, each synced once
	Appends uint64 // appends to WALs recorded, shared among those syncs
}

// journalDir is the journal's directory in dataDir.
func journalDir(dataDir string) string { return filepath.Join(dataDir, journalDirName) }

// segmentName is the file of segment seq.
func segmentName(seq uint64) string { return fmt.Sprintf("journal-%016x.log", seq) }

// OpenJournal replays the journal dataDir holds, if any (ReplayJournal),
// and opens an empty one, which the groups' stores then append to
// (OpenLogStore). It refuses with ErrInUse a journal another process holds.
func OpenJournal(dataDir string, logger hclog.Logger) (*Journal, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	dir := journalDir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open the journal: %w", err)
	}
	lock, err := lockJournal(dir)
	if err != nil {
		return nil, err
	}
	last, err := replayLocked(dataDir, logger)
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		lock.Close()
		return nil, err
	}
	j := &Journal{dataDir: dataDir, dir: dir, log: logger, lock: lock, wals: make(map[*journaledStore]struct{}),
		stop: make(chan struct{}), done: make(chan struct{}), vfs: func() types.VFS { return walfs.New() }}
	j.cond.L = &j.mu
	if j.file, err = createSegment(dir, last+1); err != nil {
		lock.Close()
		return nil, err
	}
	j.seq, j.started = last+1, time.Now()
	go j.checkpointLoop()
	return j, nil
}

// lockJournal takes the journal directory's lock without waiting.
func lockJournal(dir string) (*os.File, error) {
	lock, err := lockFile(filepath.Join(dir, walLockFile))
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("%w: %s", ErrInUse, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open the journal: %w", err)
	}
	return lock, nil
}

// createSegment creates segment seq in dir, durably named.
func createSegment(dir string, seq uint64) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, segmentName(seq)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal segment: %w", err)
	}
	return f, nil
}

// segments lists the segments in dir, oldest first.
func segments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range entries {
		var seq uint64
		if n, err := fmt.Sscanf(e.Name(), "journal-%016x.log", &seq); err == nil && n == 1 && e.Name() == segmentName(seq) {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// append adds the records add appends to the journal and returns once
// they are synced, written by this caller or by another whose batch
// holds them.
func (j *Journal) append(add func([]byte) []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	if j.closed {
		return fmt.Errorf("journal %s: closed", j.dir)
	}
	j.pending = add(j.pending)
	j.waiting++
	j.appends.Add(1)
	batch := j.queued + 1
	for j.synced < batch {
		if j.failed != nil {
			return j.failed
		}
		if !j.writing && !j.rotating {
			j.writeLocked()
			continue
		}
		j.cond.Wait()
	}
	return nil
}

// maxSpare bounds the buffer kept for the next batch.
const maxSpare = 4 << 20

// writeLocked writes and syncs the pending records as the next batch. It
// is called with mu held and no batch being written, and unlocks mu while
// it writes.
func (j *Journal) writeLocked() {
	j.writing = true
	buf, f, appends := j.pending, j.file, j.waiting
	j.pending, j.waiting = j.spare[:0], 0
	j.queued++
	batch := j.queued
	j.mu.Unlock()
	start := time.Now()
	_, err := f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	metrics.MeasureSince(JournalSyncTiming, start)
	metrics.AddSample(JournalBatchSample, float32(appends))
	j.syncs.Add(1)
	j.mu.Lock()
	if cap(buf) <= maxSpare {
		j.spare = buf[:0]
	}
	j.size += int64(len(buf))
	if err != nil {
		j.failed = fmt.Errorf("journal %s: %w", f.Name(), err)
		j.log.Error("the journal failed: no Raft log append can be made durable", "err", err)
	} else {
		j.synced = batch
	}
	j.writing = false
	j.cond.Broadcast()
}

// register adds a WAL whose files each checkpoint syncs.
func (j *Journal) register(s *journaledStore) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.wals[s] = struct{}{}
}

// unregister drops a WAL that closed.
func (j *Journal) unregister(s *journaledStore) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.wals, s)
}

// checkpointLoop retires segments until Close.
func (j *Journal) checkpointLoop() {
	defer close(j.done)
	t := time.NewTicker(journalCheckpointCheck)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
		}
		j.mu.Lock()
		due := j.size >= journalSegmentBytes || j.size > 0 && time.Since(j.started) >= journalCheckpointEvery
		j.mu.Unlock()
		if due {
			if err := j.checkpoint(); err != nil {
				j.log.Warn("journal checkpoint failed; its segments are kept and it is tried again", "err", err)
			}
		}
	}
}

// checkpoint starts a new segment, syncs every WAL's files, and deletes
// the segments before the new one: every record in them is then in a
// synced WAL file, since a WAL writes its copy before the journal's.
func (j *Journal) checkpoint() error {
	j.mu.Lock()
	for j.rotating {
		j.cond.Wait()
	}
	j.rotating = true // no batch is written into the segment being replaced
	for j.writing {
		j.cond.Wait()
	}
	if j.failed != nil {
		j.rotating = false
		j.cond.Broadcast()
		j.mu.Unlock()
		return j.failed
	}
	next := j.seq + 1
	j.mu.Unlock()
	f, err := createSegment(j.dir, next)
	j.mu.Lock()
	if err == nil {
		j.file.Close()
		j.file, j.seq, j.size, j.started = f, next, 0, time.Now()
	}
	j.rotating = false
	j.cond.Broadcast() // records that waited go to the new segment
	wals := make([]*journaledStore, 0, len(j.wals))
	for s := range j.wals {
		wals = append(wals, s)
	}
	j.mu.Unlock()
	if err != nil {
		return err
	}
	for _, s := range wals {
		if err := s.fs.syncDirty(); err != nil {
			return fmt.Errorf("sync %s: %w", s.Path(), err)
		}
	}
	return removeSegmentsBefore(j.dir, next)
}

// removeSegmentsBefore deletes the segments in dir older than seq.
func removeSegmentsBefore(dir string, seq uint64) error {
	seqs, err := segments(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, s := range seqs {
		if s >= seq {
			break
		}
		if err := os.Remove(filepath.Join(dir, segmentName(s))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = true
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}

// Stats returns the journal's counters.
func (j *Journal) Stats() JournalStats {
	return JournalStats{Syncs: j.syncs.Load(), Appends: j.appends.Load()}
}

// Close syncs the WALs still open, retires every segment and releases the
// journal; appends fail from then on, so the groups' stores are closed
// first.
func (j *Journal) Close() error {
	// Closed first: an append the final checkpoint did not see would go
	// into the segment Close then deletes, its WAL's copy unsynced.
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	close(j.stop)
	<-j.done
	err := j.checkpoint()
	j.mu.Lock()
	if cerr := j.file.Close(); err == nil {
		err = cerr
	}
	j.mu.Unlock()
	if err == nil {
		err = removeSegmentsBefore(j.dir, j.seq+1)
	}
	if cerr := j.lock.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close the journal: %w", err)
	}
	return nil
}

// walName is the name a WAL's records carry: its directory relative to the
// data directory, with forward slashes.
func (j *Journal) walName(path string) (string, error) {
	rel, err := filepath.Rel(j.dataDir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("the WAL %s is outside the journal's data directory %s", path, j.dataDir)
	}
	return filepath.ToSlash(rel), nil
}
