package persistence

import (
	"errors"
	"fmt"
	"os"
)

// LogFormat is how a group's Raft log and stable store are kept on disk.
type LogFormat int

const (
	// LogNone: the directory holds no log store yet.
	LogNone LogFormat = iota
	// LogWAL is hashicorp/raft-wal: segment files appended to, one fsync
	// per append (the entries of every append land in one write).
	LogWAL
	// LogBolt is hashicorp/raft-boltdb: a bbolt B+tree, two fsyncs per
	// append (its pages, then its meta page). Every release before the WAL
	// kept its logs so, and those stores stay as they are.
	LogBolt
)

// DefaultLogFormat is the format of the stores a new data directory gets.
const DefaultLogFormat = LogWAL

// String is the format's name, as --raft-log-store spells it.
func (f LogFormat) String() string {
	switch f {
	case LogWAL:
		return "wal"
	case LogBolt:
		return "bolt"
	case LogNone:
		return "none"
	}
	return fmt.Sprintf("LogFormat(%d)", int(f))
}

// ParseLogFormat reads a format's name: wal or bolt.
func ParseLogFormat(name string) (LogFormat, error) {
	switch name {
	case "wal":
		return LogWAL, nil
	case "bolt":
		return LogBolt, nil
	}
	return LogNone, fmt.Errorf("unknown Raft log store %q: wal or bolt", name)
}

// StoredLogFormat says which format the group's log store in dir has, or
// LogNone when it has none yet. A directory holding both is refused: which
// of them holds the votes and entries cannot be told.
func StoredLogFormat(dir string) (LogFormat, error) {
	bolt, err := exists(logStorePath(dir))
	if err != nil {
		return LogNone, err
	}
	wal, err := exists(WALPath(dir))
	if err != nil {
		return LogNone, err
	}
	switch {
	case bolt && wal:
		return LogNone, fmt.Errorf("%w: %s holds both a bbolt log (%s) and a WAL (%s)", ErrDamagedLog, dir, logStorePath(dir), WALPath(dir))
	case bolt:
		return LogBolt, nil
	case wal:
		return LogWAL, nil
	}
	return LogNone, nil
}

// exists says whether path exists.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
