package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// FormatVersion is the data directory's format. A directory written by a
// later format is refused rather than misread.
const FormatVersion = 1

// Identity is what a data directory was created for. A node restarted with
// another node id or shard count would map keys to other shards or replay
// another node's votes, so Open refuses it.
type Identity struct {
	Format int    `json:"format"`
	NodeID string `json:"node_id"`
	Shards int    `json:"shards"`
	// Members are the Raft members, "id@bus-address" (just this node's id
	// for a single node). A node restarted with others would keep its old
	// Raft configuration and lead a second copy of its shards.
	Members []string `json:"members"`
}

// Layout names the files of one data directory.
type Layout struct {
	Dir string
}

const identityFile = "rlserver.json"

// ErrIdentityMismatch reports a data directory created for another node or
// shard count. Open's errors wrap it in an *IdentityError.
var ErrIdentityMismatch = errors.New("data directory was created with other settings")

// IdentityField names the field of Identity a data directory disagrees on.
type IdentityField string

// The fields of Identity, as IdentityError names them.
const (
	FieldFormat  IdentityField = "Format"
	FieldNodeID  IdentityField = "NodeID"
	FieldShards  IdentityField = "Shards"
	FieldMembers IdentityField = "Members"
)

// IdentityError reports that a data directory was created with another
// identity than the one it is opened with: which field differs, what the
// directory holds and what it was opened with. It wraps ErrIdentityMismatch.
type IdentityError struct {
	Dir   string // the data directory (for FieldFormat, its identity file)
	Field IdentityField
	// Have is what the directory was created with, Want what it is opened
	// with: int for FieldFormat and FieldShards, string for FieldNodeID,
	// []string for FieldMembers.
	Have, Want any
}

// Error names the setting that differs as Identity's field.
func (e *IdentityError) Error() string {
	return e.Explain(func(f IdentityField) string { return string(f) })
}

// Explain is Error with the setting that differs named by name: a program
// words it as its own setting (a command-line flag, say).
func (e *IdentityError) Explain(name func(IdentityField) string) string {
	var detail string
	switch e.Field {
	case FieldFormat:
		detail = fmt.Sprintf("%s has format %d, this rlserver reads format %d", e.Dir, e.Have, e.Want)
	case FieldNodeID:
		detail = fmt.Sprintf("%s belongs to node %q, not %s %q", e.Dir, e.Have, name(e.Field), e.Want)
	case FieldShards:
		detail = fmt.Sprintf("%s holds %d shards, not %s %d (the shard count cannot change)", e.Dir, e.Have, name(e.Field), e.Want)
	default:
		detail = fmt.Sprintf("%s belongs to a cluster of %v, not %v (the membership cannot change: use the original %s, or a new data directory)",
			e.Dir, e.Have, e.Want, name(e.Field))
	}
	return ErrIdentityMismatch.Error() + ": " + detail
}

// Unwrap returns ErrIdentityMismatch.
func (e *IdentityError) Unwrap() error { return ErrIdentityMismatch }

// Open prepares dir for the node described by id: it creates the directory
// and its identity file on first use and checks them on every later one.
func Open(dir string, id Identity) (Layout, error) {
	id.Format = FormatVersion
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Layout{}, fmt.Errorf("data directory: %w", err)
	}
	l := Layout{Dir: dir}
	path := filepath.Join(dir, identityFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, writeFileSync(path, mustJSON(id))
	case err != nil:
		return Layout{}, fmt.Errorf("data directory: %w", err)
	}
	var have Identity
	if err := json.Unmarshal(data, &have); err != nil {
		return Layout{}, fmt.Errorf("data directory: %s: %w", path, err)
	}
	switch {
	case have.Format != FormatVersion:
		return Layout{}, &IdentityError{Dir: path, Field: FieldFormat, Have: have.Format, Want: FormatVersion}
	case have.NodeID != id.NodeID:
		return Layout{}, &IdentityError{Dir: dir, Field: FieldNodeID, Have: have.NodeID, Want: id.NodeID}
	case have.Shards != id.Shards:
		return Layout{}, &IdentityError{Dir: dir, Field: FieldShards, Have: have.Shards, Want: id.Shards}
	case !slices.Equal(have.Members, id.Members):
		return Layout{}, &IdentityError{Dir: dir, Field: FieldMembers, Have: have.Members, Want: id.Members}
	}
	return l, nil
}

// ReadIdentity returns the identity dir was created with, and false when it
// holds none yet.
func ReadIdentity(dir string) (Identity, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, fmt.Errorf("data directory: %w", err)
	}
	var id Identity
	if err := json.Unmarshal(data, &id); err != nil {
		return Identity{}, false, fmt.Errorf("data directory: %s: %w", filepath.Join(dir, identityFile), err)
	}
	return id, true, nil
}

// ShardDir is the directory of one shard's files, created on demand.
func (l Layout) ShardDir(shard int) (string, error) {
	dir := filepath.Join(l.Dir, "shards", fmt.Sprintf("%03d", shard))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("shard %d directory: %w", shard, err)
	}
	return dir, nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // Identity always marshals
	}
	return append(b, '\n')
}

// writeFileSync writes a file and its directory entry durably: the identity
// must not vanish in a crash after the first Raft write.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
