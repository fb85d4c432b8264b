package cluster

import (
	"runtime"
	"testing"
)

// What an entry allocates on its way through Raft is what a leader's
// collector has to keep up with when each entry carries one or two
// requests (an open-loop load: docs/performance.md). hashicorp/raft sizes a
// slice by MaxAppendEntries every time the commit index moves: at 512 that
// was 4 KiB an entry, two thirds of all a durable node allocated under
// such a load.
func TestRaftEntryAllocatesLittle(t *testing.T) {
	tc := startTestCluster(t, 1, 1)
	tc.leaderOf(0)
	for range 200 { // the log cache, buffers and pools filled
		tc.serve(0, 0, sliding("k", 1_000_000, 60_000))
	}
	const entries = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range entries {
		tc.serve(0, 0, sliding("k", 1_000_000, 60_000))
	}
	runtime.ReadMemStats(&after)
	perEntry := (after.TotalAlloc - before.TotalAlloc) / entries
	objects := (after.Mallocs - before.Mallocs) / entries
	// 2.9 KB and 42 objects here (0.8 KB and 6 objects of it this test's
	// call: its channel, request and timer); 3.2 KB and 51 objects with
	// the entry's encoding grown as it was written, a timer for Raft's
	// queue, a func value for each request and the stored copy's checksum
	// apart from it; 7.5 KB with MaxAppendEntries at 512.
	if perEntry > 4096 || objects > 44 {
		t.Fatalf("%d bytes and %d objects allocated an entry of one request, want at most 4 KiB and 44", perEntry, objects)
	}
}
