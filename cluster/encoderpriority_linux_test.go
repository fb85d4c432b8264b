package cluster

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The encoding runs on a thread at the priority asked for, and the
// caller's thread keeps its own.
func TestEncoderRunsAtItsPriority(t *testing.T) {
	niceOf := func() int {
		// The system call answers 20 - nice (glibc turns it back).
		p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
		if err != nil {
			t.Fatal(err)
		}
		return 20 - p
	}
	e, _ := newFakeEncoders(2)
	before := niceOf()
	var during int
	e.run(DefaultSnapshotNice, func() { during = niceOf() })
	if during != DefaultSnapshotNice {
		t.Errorf("encoded at nice %d, want %d", during, DefaultSnapshotNice)
	}
	if after := niceOf(); after != before {
		t.Errorf("the caller's nice went from %d to %d", before, after)
	}
}
