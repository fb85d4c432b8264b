package persistence

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// BenchmarkWALCompaction measures what an append waits for while Raft's
// compaction deletes an obsolete segment: with raft-wal's own deletion (an
// unlink under the log's write lock) and with the log store rlserver opens
// (reapingFiler). Each iteration fills a fresh WAL past two 16 MiB
// segments, then appends 100-byte entries one at a time, each synced as a
// commit is, and compacts to the newest entries 100 ms in. It reports the
// slowest append in the 300 ms after the compaction began and the slowest
// in the 100 ms before it (what the disk does anyway), medians over the
// iterations, and the compaction's own time.
//
//	go test -run '^$' -bench WALCompaction -benchtime 10x ./persistence
//
// docs/performance.md ("A log segment's deletion") quotes it.
func BenchmarkWALCompaction(b *testing.B) {
	opens := []struct {
		name string
		open func(b *testing.B, dir string) raft.LogStore
	}{
		{"raft-wal", func(b *testing.B, dir string) raft.LogStore {
			w, err := wal.Open(dir, wal.WithSegmentSize(walSegmentSize), wal.WithLogger(hclog.NewNullLogger()))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { w.Close() })
			return w
		}},
		{"rlserver", func(b *testing.B, dir string) raft.LogStore {
			s, err := openWAL(dir, hclog.NewNullLogger())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, o := range opens {
		b.Run(o.name, func(b *testing.B) {
			var during, before, compact []time.Duration
			for range b.N {
				dir, err := os.MkdirTemp(b.TempDir(), "wal")
				if err != nil {
					b.Fatal(err)
				}
				d, bf, c := compactionBesideAppends(b, o.open(b, dir))
				during, before, compact = append(during, d), append(before, bf), append(compact, c)
			}
			b.ReportMetric(median(during).Seconds()*1e3, "ms-slowest-append-during")
			b.ReportMetric(median(before).Seconds()*1e3, "ms-slowest-append-before")
			b.ReportMetric(median(compact).Seconds()*1e3, "ms-compaction")
		})
	}
}

// compactionBesideAppends runs one iteration of BenchmarkWALCompaction on
// logs, an empty log store.
func compactionBesideAppends(b *testing.B, logs raft.LogStore) (during, before, compaction time.Duration) {
	b.Helper()
	next := uint64(1)
	batch := make([]*raft.Log, 64)
	data := make([]byte, 4096)
	for filled := 0; filled < 2*walSegmentSize+walSegmentSize/2; filled += len(batch) * len(data) {
		for i := range batch {
			batch[i] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
			next++
		}
		if err := logs.StoreLogs(batch); err != nil {
			b.Fatal(err)
		}
	}
	type appended struct{ start, took time.Duration }
	var appends []appended
	stop := make(chan struct{})
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		small := make([]byte, 100)
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			if err := logs.StoreLog(&raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: small}); err != nil {
				panic(err)
			}
			next++
			appends = append(appends, appended{t0.Sub(begin), time.Since(t0)})
		}
	}()
	time.Sleep(100 * time.Millisecond) // the appends alone first
	at := time.Since(begin)
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	if err := logs.DeleteRange(first, last-1000); err != nil {
		b.Fatal(err)
	}
	compaction = time.Since(begin) - at
	time.Sleep(300*time.Millisecond - compaction)
	close(stop)
	<-done
	for _, a := range appends {
		switch {
		case a.start+a.took >= at && a.start < at+300*time.Millisecond:
			during = max(during, a.took)
		case a.start+a.took < at:
			before = max(before, a.took)
		}
	}
	return during, before, compaction
}

// median is the middle of ds (the upper one of two).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
