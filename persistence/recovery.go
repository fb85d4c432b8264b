package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// recoveredFile marks a shard's directory whose Raft configuration
// rlserver recover rewrote. The configuration a recovery writes is recorded
// at the start of the group's log (hashicorp/raft's RecoverCluster places
// it at index 1), before configurations the cluster's catalogue may have
// recorded from the lost replicas; the mark tells the node that this older
// index is the shard's truth, until the catalogue has recorded it.
const recoveredFile = "recovered"

// MarkRecovered marks groupDir, durably, as holding a group whose
// configuration is being rewritten by a recovery; why is kept in the file
// for the operator who finds it.
func MarkRecovered(groupDir, why string) error {
	if err := writeFileSync(filepath.Join(groupDir, recoveredFile), []byte(why+"\n")); err != nil {
		return fmt.Errorf("marking %s recovered: %w", groupDir, err)
	}
	return nil
}

// IsRecovered reports whether groupDir holds a group recovered by rlserver
// recover whose configuration the cluster has not recorded yet.
func IsRecovered(groupDir string) bool {
	_, err := os.Stat(filepath.Join(groupDir, recoveredFile))
	return err == nil
}

// ClearRecovered removes groupDir's recovery mark, once the cluster has
// recorded the recovered configuration.
func ClearRecovered(groupDir string) error {
	err := os.Remove(filepath.Join(groupDir, recoveredFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clearing %s's recovery mark: %w", groupDir, err)
	}
	return nil
}
