//go:build !unix

package persistence

import (
	"errors"
	"os"
)

// errLocked reports a file that another process holds locked.
var errLocked = errors.New("locked by another process")

// lockFile refuses: this platform has no lock rlserver can take on the
// WAL's directory, and an unlocked store could be opened twice. Use the
// bolt format (--raft-log-store bolt), which locks its own file.
func lockFile(path string) (*os.File, error) {
	return nil, errors.New("the WAL log store needs file locks this platform does not offer: use --raft-log-store bolt")
}
