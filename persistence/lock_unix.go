//go:build unix

package persistence

import (
	"errors"
	"os"
	"syscall"
)

// errLocked reports a file that another process holds locked.
var errLocked = errors.New("locked by another process")

// lockFile opens path, creating it, and takes an exclusive lock on it
// without waiting; closing the file releases the lock, as does the
// process's end, however it ends.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return f, nil
}
