package persistence

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// formatVersion is the data directory's format. A directory written by a
// later format is refused rather than misread.
//
//	1  node id, shard count, member list
//	2  and an incarnation, the cluster's id, the initial member list with
//	   client addresses; membership lives in the cluster's catalogue
//
// A format 1 directory is upgraded to format 2 when it is opened, once: an
// rlserver that reads format 1 only refuses it from then on, so a node is
// never run again by a release that ignores the catalogue.
const formatVersion = 2

// formatBeforeCatalogue is the format of the releases before the catalogue.
const formatBeforeCatalogue = 1

// Identity is what a data directory was created for. A node restarted with
// another node id or shard count would map keys to other shards or replay
// another node's votes, so Open refuses it.
type Identity struct {
	Format int    `json:"format"`
	NodeID string `json:"node_id"`
	// Shards is the shard count; 0 in a node that has not joined its
	// cluster yet, which tells it.
	Shards int `json:"shards"`
	// Members are the Raft members the cluster was created with,
	// "id@bus-address" (just this node's id for a single node; none for a
	// node that joined later). The cluster's id is derived from them.
	Members []string `json:"members,omitempty"`
	// Incarnation is made at random when the directory is created (or
	// upgraded from format 1): a node whose directory was lost and made
	// again has another one, and the cluster, which remembers each node's,
	// refuses it under its old id, since it has forgotten the Raft votes it
	// cast.
	Incarnation string `json:"incarnation,omitempty"`
	// Cluster is the id of the cluster the node belongs to, set once the
	// node has bootstrapped its groups or joined ("" before: the directory
	// holds nothing that counts yet).
	Cluster string `json:"cluster,omitempty"`
	// Initial is the member list the cluster was created with, as
	// "id@client-address@bus-address": the catalogue's first contents.
	Initial []string `json:"initial,omitempty"`
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
		detail = fmt.Sprintf("%s has format %d, this rlserver reads formats 1 to %d", e.Dir, e.Have, e.Want)
	case FieldNodeID:
		detail = fmt.Sprintf("%s belongs to node %q, not %s %q", e.Dir, e.Have, name(e.Field), e.Want)
	case FieldShards:
		detail = fmt.Sprintf("%s holds %d shards, not %s %d (the shard count cannot change)", e.Dir, e.Have, name(e.Field), e.Want)
	default:
		detail = fmt.Sprintf("%s belongs to a cluster of %v, not %v (a single node cannot become a cluster's member, nor a member a single node; "+
			"a directory made before the catalogue is upgraded with the %s it was created with; add nodes to a cluster with --join)",
			e.Dir, e.Have, e.Want, name(e.Field))
	}
	return ErrIdentityMismatch.Error() + ": " + detail
}

// Unwrap returns ErrIdentityMismatch.
func (e *IdentityError) Unwrap() error { return ErrIdentityMismatch }

// Opened is a data directory as Open found it.
type Opened struct {
	Layout
	// Identity is the directory's, as stored (its incarnation included).
	Identity Identity
	// Upgraded says the directory was format 1 until this Open: it was
	// created by a release before the catalogue, and holds shard groups
	// but no catalogue yet.
	Upgraded bool
}

// Open prepares dir for the node described by want (NodeID, and Shards
// when not 0; the other fields are stored when the directory is created):
// it creates the directory and its identity file, with a new incarnation,
// on first use, upgrades a format 1 identity, and checks the node id and
// shard count on every later use. The member list is not checked: after
// creation the cluster's catalogue, not the command line, says who the
// members are.
func Open(dir string, want Identity) (Opened, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Opened{}, fmt.Errorf("data directory: %w", err)
	}
	o := Opened{Layout: Layout{Dir: dir}}
	have, ok, err := ReadIdentity(dir)
	switch {
	case err != nil:
		return Opened{}, err
	case !ok:
		want.Format = formatVersion
		if want.Incarnation, err = newIncarnation(); err != nil {
			return Opened{}, err
		}
		o.Identity = want
		return o, o.WriteIdentity(want)
	case have.Format != formatBeforeCatalogue && have.Format != formatVersion:
		return Opened{}, &IdentityError{Dir: filepath.Join(dir, identityFile), Field: FieldFormat, Have: have.Format, Want: formatVersion}
	case have.NodeID != want.NodeID:
		return Opened{}, &IdentityError{Dir: dir, Field: FieldNodeID, Have: have.NodeID, Want: want.NodeID}
	case want.Shards != 0 && have.Shards != 0 && have.Shards != want.Shards:
		return Opened{}, &IdentityError{Dir: dir, Field: FieldShards, Have: have.Shards, Want: want.Shards}
	case want.Members != nil && !membersFit(have, want.Members):
		return Opened{}, &IdentityError{Dir: dir, Field: FieldMembers, Have: have.Members, Want: want.Members}
	}
	if have.Format == formatBeforeCatalogue {
		o.Upgraded = true
		have.Format = formatVersion
		if have.Incarnation, err = newIncarnation(); err != nil {
			return Opened{}, err
		}
		have.Initial = want.Initial
		if err := o.WriteIdentity(have); err != nil {
			return Opened{}, err
		}
	}
	o.Identity = have
	return o, nil
}

// membersFit reports whether a directory created as have may be opened
// with the member list want (the --cluster list, or just the node's id for
// a single node). A directory made before the catalogue is upgraded from
// exactly the list it was created with, which becomes the catalogue; after
// that the list only has to say single node or cluster as the directory
// does: a single node's groups bootstrapped with itself alone would lead a
// second copy of their shards in a cluster, and a cluster's node cannot
// serve alone.
func membersFit(have Identity, want []string) bool {
	if have.Format == formatBeforeCatalogue {
		return slices.Equal(have.Members, want)
	}
	single := func(m []string) bool { return len(m) <= 1 }
	if have.Cluster != "" && len(have.Members) == 0 {
		return false // a node that joined a cluster is restarted with --join
	}
	return single(have.Members) == single(want)
}

// newIncarnation is 128 random bits as hex.
func newIncarnation() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("data directory: incarnation: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// WriteIdentity replaces the directory's identity, durably.
func (l Layout) WriteIdentity(id Identity) error {
	if err := writeFileSync(filepath.Join(l.Dir, identityFile), mustJSON(id)); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
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
	dir := l.shardPath(shard)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("shard %d directory: %w", shard, err)
	}
	return dir, nil
}

func (l Layout) shardPath(shard int) string {
	return filepath.Join(l.Dir, "shards", fmt.Sprintf("%03d", shard))
}

// HasShardDir reports whether the directory holds files of shard.
func (l Layout) HasShardDir(shard int) bool {
	_, err := os.Stat(l.shardPath(shard))
	return err == nil
}

// RemoveShardDir deletes shard's files: the node no longer holds a replica
// of it, and one it is given again starts empty, from the leader's snapshot.
func (l Layout) RemoveShardDir(shard int) error {
	if err := os.RemoveAll(l.shardPath(shard)); err != nil {
		return fmt.Errorf("shard %d directory: %w", shard, err)
	}
	return nil
}

// CatalogueDir is the directory of the catalogue's Raft group (the
// cluster's membership and placement), created on demand.
func (l Layout) CatalogueDir() (string, error) {
	dir := l.cataloguePath()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("catalogue directory: %w", err)
	}
	return dir, nil
}

func (l Layout) cataloguePath() string { return filepath.Join(l.Dir, "catalogue") }

// HasCatalogueDir reports whether the directory holds the catalogue
// group's files.
func (l Layout) HasCatalogueDir() bool {
	_, err := os.Stat(l.cataloguePath())
	return err == nil
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
