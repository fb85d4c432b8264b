package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"

	"github.com/rlserver/rlserver/internal/poll"
)

func entry(index, term uint64, data string) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: []byte(data), AppendedAt: time.Unix(1700000000, int64(index))}
}

func entries(from, to, term uint64, size int) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		l := entry(i, term, fmt.Sprintf("t%d-e%d-", term, i))
		l.Data = append(l.Data, bytes.Repeat([]byte{byte(i)}, size)...)
		logs = append(logs, l)
	}
	return logs
}

func TestJournalRecordsReadBackAndTearsAreSeen(t *testing.T) {
	logs := []*raft.Log{entry(7, 2, "seven"), {Index: 8, Term: 2, Type: raft.LogConfiguration, Extensions: []byte("x")}}
	var b []byte
	b = appendLogsRecord(b, "shard-1/wal", logs)
	b = appendTruncateRecord(b, "shard-1/wal", 6)
	b = appendDurableRecord(b, "catalogue/wal")
	want := []journalRecord{
		{kind: recordAppend, wal: "shard-1/wal", logs: logs},
		{kind: recordTruncate, wal: "shard-1/wal", last: 6},
		{kind: recordDurable, wal: "catalogue/wal"},
	}
	off := 0
	for i, w := range want {
		rec, n, err := nextRecord(b[off:])
		if err != nil || n == 0 {
			t.Fatalf("record %d: n %d, %v", i, n, err)
		}
		if rec.kind != w.kind || rec.wal != w.wal || rec.last != w.last || len(rec.logs) != len(w.logs) {
			t.Fatalf("record %d: %+v, want %+v", i, rec, w)
		}
		for k, l := range rec.logs {
			o := w.logs[k]
			if l.Index != o.Index || l.Term != o.Term || l.Type != o.Type || !bytes.Equal(l.Data, o.Data) ||
				!bytes.Equal(l.Extensions, o.Extensions) || !l.AppendedAt.Equal(o.AppendedAt) {
				t.Fatalf("record %d entry %d: %+v, want %+v", i, k, l, o)
			}
		}
		off += n
	}
	if _, n, err := nextRecord(b[off:]); n != 0 || err != nil {
		t.Fatalf("after the last record: n %d, %v", n, err)
	}
	if _, n, err := nextRecord(append(b[off:off:off], make([]byte, 20)...)); n != 0 || err != nil {
		t.Fatalf("zeros: n %d, %v", n, err)
	}
	first, n, _ := nextRecord(b)
	_ = first
	for cut := 1; cut < n; cut++ { // every tear of the first record
		if _, m, err := nextRecord(b[:cut]); !errors.Is(err, errTorn) && !(m == 0 && err == nil && cut < recordHeader && allZero(b[:cut])) {
			t.Fatalf("cut at %d: n %d, %v", cut, m, err)
		}
	}
	flipped := bytes.Clone(b)
	flipped[n-3] ^= 1
	if _, _, err := nextRecord(flipped); !errors.Is(err, errTorn) {
		t.Fatalf("flipped bit: %v", err)
	}
}

// openJournal opens a journal in dir whose WALs lose, at crash, what was
// not synced.
func openJournal(t *testing.T, dir string, disk *crashDisk) *Journal {
	t.Helper()
	j, err := OpenJournal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if disk != nil {
		j.vfs = func() types.VFS { return disk }
	}
	return j
}

func openJournaled(t *testing.T, j *Journal, dir string) Store {
	t.Helper()
	st, err := j.OpenLogStore(dir, LogWAL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func storeAll(t *testing.T, st Store, logs []*raft.Log) {
	t.Helper()
	if err := st.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// checkLog fails unless st holds exactly want, from its first index.
func checkLog(t *testing.T, st Store, want []*raft.Log) {
	t.Helper()
	first, _ := st.FirstIndex()
	last, _ := st.LastIndex()
	if len(want) == 0 {
		if last != 0 && last >= first {
			t.Fatalf("log %d..%d, want it empty", first, last)
		}
		return
	}
	if first != want[0].Index || last != want[len(want)-1].Index {
		t.Fatalf("log %d..%d, want %d..%d", first, last, want[0].Index, want[len(want)-1].Index)
	}
	for _, w := range want {
		var l raft.Log
		if err := st.GetLog(w.Index, &l); err != nil {
			t.Fatalf("entry %d: %v", w.Index, err)
		}
		if l.Term != w.Term || !bytes.Equal(l.Data, w.Data) {
			t.Fatalf("entry %d: term %d data %.20q, want term %d data %.20q", w.Index, l.Term, l.Data, w.Term, w.Data)
		}
	}
}

func TestJournalSharesOneSyncAmongAppendsThatWait(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, dir, nil)
	defer j.Close()
	var stores []Store
	for i := range 4 {
		st := openJournaled(t, j, filepath.Join(dir, fmt.Sprintf("shard-%d", i)))
		defer st.Close()
		stores = append(stores, st)
	}
	// Hold the journal as if a batch were being written, queue one append
	// from each store, then let it go: one write and one sync take all four.
	j.mu.Lock()
	j.writing = true
	j.mu.Unlock()
	before := j.Stats()
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.StoreLogs(entries(1, 3, 1, 10))
		}()
	}
	poll.Until(t, 5*time.Second, "four appends queued", func() (bool, error) {
		return j.Stats().Appends-before.Appends == 4, nil
	})
	j.mu.Lock()
	j.writing = false
	j.cond.Broadcast()
	j.mu.Unlock()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	if syncs := j.Stats().Syncs - before.Syncs; syncs != 1 {
		t.Fatalf("%d syncs for four appends that waited together, want 1", syncs)
	}
	for _, st := range stores {
		checkLog(t, st, entries(1, 3, 1, 10))
	}
}

// crashDisk is raft-wal's file system, whose files can be put back as
// their last sync left them: a crash that loses every write not synced.
type crashDisk struct {
	*walfs.FS
	mu     sync.Mutex
	synced map[string][]byte // a file's content at its last sync; nil: never synced
	syncs  int
}

func newCrashDisk() *crashDisk { return &crashDisk{FS: walfs.New(), synced: make(map[string][]byte)} }

func (d *crashDisk) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := d.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.synced[filepath.Join(dir, name)] = nil
	d.mu.Unlock()
	return &crashFile{WritableFile: f, disk: d, path: filepath.Join(dir, name)}, nil
}

func (d *crashDisk) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := d.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.synced[path] = b // what an open finds was on disk
	d.mu.Unlock()
	return &crashFile{WritableFile: f, disk: d, path: path}, nil
}

// crash puts every file back as it was at its last sync (zeros if it
// never was).
func (d *crashDisk) crash(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for path, b := range d.synced {
		info, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		content := make([]byte, info.Size())
		copy(content, b)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type crashFile struct {
	types.WritableFile
	disk *crashDisk
	path string
}

func (f *crashFile) Sync() error {
	if err := f.WritableFile.Sync(); err != nil {
		return err
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	f.disk.mu.Lock()
	f.disk.synced[f.path] = b
	f.disk.syncs++
	f.disk.mu.Unlock()
	return nil
}

// abandon stops j and releases what st and j hold, without syncing or
// closing anything: the process died.
func abandon(t *testing.T, j *Journal, stores ...Store) {
	t.Helper()
	close(j.stop)
	<-j.done
	j.file.Close()
	j.lock.Close()
	for _, st := range stores {
		js := st.(*journaledStore)
		ws := js.Store.(*walStore)
		ws.filer.wait() // deletions under way finish: they were the process's last acts
		js.meta.Close() // its lock, which raft-wal's next open would wait for
		ws.lock.Close()
	}
}

func TestJournalReplayRestoresWhatTheWALsDidNotSync(t *testing.T) {
	big := 64 << 10 // entries large enough that a WAL seals a segment (16 MiB) on the way
	cases := []struct {
		name string
		// run makes the calls on the stores of shard-0 and shard-1 and
		// returns what each must hold after the replay.
		run func(t *testing.T, j *Journal, dir string, a, b Store) (wantA, wantB []*raft.Log, open []Store)
	}{
		{"appends", func(t *testing.T, j *Journal, dir string, a, b Store) ([]*raft.Log, []*raft.Log, []Store) {
			storeAll(t, a, entries(1, 50, 1, 100))
			storeAll(t, b, entries(1, 20, 1, 100))
			storeAll(t, a, entries(51, 60, 2, 100))
			return append(entries(1, 50, 1, 100), entries(51, 60, 2, 100)...), entries(1, 20, 1, 100), []Store{a, b}
		}},
		{"a sealed segment", func(t *testing.T, j *Journal, dir string, a, b Store) ([]*raft.Log, []*raft.Log, []Store) {
			for i := uint64(1); i <= 300; i += 50 {
				storeAll(t, a, entries(i, i+49, 1, big))
			}
			return entries(1, 300, 1, big), nil, []Store{a, b}
		}},
		{"a tail dropped and written again", func(t *testing.T, j *Journal, dir string, a, b Store) ([]*raft.Log, []*raft.Log, []Store) {
			storeAll(t, a, entries(1, 10, 1, 100))
			if err := a.DeleteRange(6, 10); err != nil {
				t.Fatal(err)
			}
			storeAll(t, a, entries(6, 8, 2, 100))
			storeAll(t, b, entries(1, 10, 1, 100))
			if err := b.DeleteRange(4, 10); err != nil {
				t.Fatal(err)
			}
			return append(entries(1, 5, 1, 100), entries(6, 8, 2, 100)...), entries(1, 3, 1, 100), []Store{a, b}
		}},
		{"the head compacted", func(t *testing.T, j *Journal, dir string, a, b Store) ([]*raft.Log, []*raft.Log, []Store) {
			for i := uint64(1); i <= 400; i += 50 {
				storeAll(t, a, entries(i, i+49, 1, big))
			}
			if err := a.DeleteRange(1, 350); err != nil {
				t.Fatal(err)
			}
			storeAll(t, a, entries(401, 410, 1, 100))
			first, _ := a.FirstIndex()
			return append(entries(first, 400, 1, big), entries(401, 410, 1, 100)...), nil, []Store{a, b}
		}},
		{"the whole log replaced", func(t *testing.T, j *Journal, dir string, a, b Store) ([]*raft.Log, []*raft.Log, []Store) {
			storeAll(t, a, entries(1, 10, 1, 100))
			if err := a.DeleteRange(1, 10); err != nil { // a snapshot installed
				t.Fatal(err)
			}
			storeAll(t, a, entries(101, 105, 3, 100))
			return entries(101, 105, 3, 100), nil, []Store{a, b}
		}},
		{"a replica removed and another made in its place", func(t *testing.T, j *Journal, dir string, a, b Store) ([]*raft.Log, []*raft.Log, []Store) {
			storeAll(t, b, entries(1, 30, 1, 100))
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(dir, "shard-1")); err != nil {
				t.Fatal(err)
			}
			nb := openJournaled(t, j, filepath.Join(dir, "shard-1"))
			storeAll(t, nb, entries(40, 45, 5, 100))
			return nil, entries(40, 45, 5, 100), []Store{a, nb}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			disk := newCrashDisk()
			j := openJournal(t, dir, disk)
			a := openJournaled(t, j, filepath.Join(dir, "shard-0"))
			b := openJournaled(t, j, filepath.Join(dir, "shard-1"))
			wantA, wantB, open := c.run(t, j, dir, a, b)
			abandon(t, j, open...)
			disk.crash(t)
			if err := ReplayJournal(dir, nil); err != nil {
				t.Fatal(err)
			}
			if seqs, err := segments(journalDir(dir)); err != nil || len(seqs) != 0 {
				t.Fatalf("segments left after the replay: %v, %v", seqs, err)
			}
			for i, want := range [][]*raft.Log{wantA, wantB} {
				st, err := OpenLogStore(filepath.Join(dir, fmt.Sprintf("shard-%d", i)), LogWAL, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkLog(t, st, want)
				st.Close()
			}
		})
	}
}

func TestJournalCheckpointRetiresSegmentsOnceTheWALsAreSynced(t *testing.T) {
	dir := t.TempDir()
	disk := newCrashDisk()
	j := openJournal(t, dir, disk)
	a := openJournaled(t, j, filepath.Join(dir, "shard-0"))
	storeAll(t, a, entries(1, 20, 1, 100))
	if err := j.checkpoint(); err != nil {
		t.Fatal(err)
	}
	seqs, err := segments(journalDir(dir))
	if err != nil || len(seqs) != 1 {
		t.Fatalf("segments after a checkpoint: %v, %v", seqs, err)
	}
	storeAll(t, a, entries(21, 25, 1, 100))
	// The first 20 are only in the WAL now, synced: a crash loses none.
	abandon(t, j, a)
	disk.crash(t)
	if err := ReplayJournal(dir, nil); err != nil {
		t.Fatal(err)
	}
	st, err := OpenLogStore(filepath.Join(dir, "shard-0"), LogWAL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkLog(t, st, entries(1, 25, 1, 100))
}

func TestJournalCheckpointEndsUnderAppendsThatNeverPause(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, dir, nil)
	defer j.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		st := openJournaled(t, j, filepath.Join(dir, fmt.Sprintf("shard-%d", i)))
		defer st.Close()
		wg.Go(func() {
			for index := uint64(1); ; index++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := st.StoreLogs(entries(index, index, 1, 100)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan error, 1)
	go func() { done <- j.checkpoint() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Error("a checkpoint did not get its turn among appends that never pause")
		close(stop)
		wg.Wait()
		err = <-done
	}
	if err != nil {
		t.Error(err)
	}
	select {
	case <-stop:
	default:
		close(stop)
		wg.Wait()
	}
}

func TestJournalCloseLeavesNothingToReplay(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, dir, nil)
	a := openJournaled(t, j, filepath.Join(dir, "shard-0"))
	storeAll(t, a, entries(1, 5, 1, 10))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if seqs, err := segments(journalDir(dir)); err != nil || len(seqs) != 0 {
		t.Fatalf("segments after Close: %v, %v", seqs, err)
	}
	if err := a.StoreLogs(entries(6, 6, 1, 10)); err == nil {
		t.Fatal("an append after the store closed succeeded")
	}
	j2 := openJournal(t, dir, nil)
	defer j2.Close()
	a2 := openJournaled(t, j2, filepath.Join(dir, "shard-0"))
	defer a2.Close()
	checkLog(t, a2, entries(1, 5, 1, 10))
}

func TestJournalTornTailIsDroppedAndDamageElsewhereRefused(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, dir, nil)
	a := openJournaled(t, j, filepath.Join(dir, "shard-0"))
	storeAll(t, a, entries(1, 5, 1, 10))
	abandon(t, j, a)
	torn := appendLogsRecord(nil, "shard-0/wal", entries(6, 6, 1, 10))
	torn = torn[:len(torn)-3]
	appendToSegment(t, dir, j.seq, torn)
	if err := ReplayJournal(dir, nil); err != nil {
		t.Fatalf("a torn last write: %v", err)
	}
	st, err := OpenLogStore(filepath.Join(dir, "shard-0"), LogWAL, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, st, entries(1, 5, 1, 10)) // the torn entry 6 was never acknowledged
	st.Close()

	// The same tear in a segment that is not the last is damage.
	j = openJournal(t, dir, nil)
	a = openJournaled(t, j, filepath.Join(dir, "shard-0"))
	storeAll(t, a, entries(6, 7, 1, 10))
	abandon(t, j, a)
	appendToSegment(t, dir, j.seq, torn)
	appendToSegment(t, dir, j.seq+1, appendDurableRecord(nil, "shard-0/wal"))
	if err := ReplayJournal(dir, nil); !errors.Is(err, ErrDamagedLog) {
		t.Fatalf("a tear before the last segment: %v, want ErrDamagedLog", err)
	}
}

// appendToSegment appends b to journal segment seq in dir, creating it.
func appendToSegment(t *testing.T, dir string, seq uint64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(journalDir(dir), segmentName(seq)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestJournalRefusesASecondProcess(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, dir, nil)
	defer j.Close()
	if _, err := OpenJournal(dir, nil); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second open: %v, want ErrInUse", err)
	}
	if err := ReplayJournal(dir, nil); !errors.Is(err, ErrInUse) {
		t.Fatalf("a replay beside an open journal: %v, want ErrInUse", err)
	}
}

func TestJournalLeavesBoltLogsToSyncTheirOwn(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(t, dir, nil)
	defer j.Close()
	if err := os.Mkdir(filepath.Join(dir, "shard-0"), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := j.OpenLogStore(filepath.Join(dir, "shard-0"), LogBolt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, journaled := st.(*journaledStore); journaled {
		t.Fatal("a bolt log was journaled")
	}
	storeAll(t, st, entries(1, 3, 1, 10))
	if n := j.Stats().Appends; n != 0 {
		t.Fatalf("%d appends journaled for a bolt log", n)
	}
}
