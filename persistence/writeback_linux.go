//go:build linux

package persistence

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBack sends n bytes of f from off to the disk and waits for them,
// without the device cache flush of an fsync: the log's next sync finds
// them written.
func writeBack(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}
