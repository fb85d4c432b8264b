package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// vouchedFile holds the incarnations of the cluster's initial members this
// node has vouched for (cluster/placement's vouch.go): before the cluster's
// catalogue knows an initial member's data directory, the other initial
// members record it, each in a file of its own data directory, so that a
// node whose directory was lost is refused under its old id even then.
const vouchedFile = "vouched.json"

// ReadVouched returns the incarnations this node has vouched for, by node
// id; an empty map when it has vouched for none.
func (l Layout) ReadVouched() (map[string]string, error) {
	path := filepath.Join(l.Dir, vouchedFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	v := map[string]string{}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("data directory: %s: %w", path, err)
	}
	return v, nil
}

// WriteVouched replaces the incarnations this node has vouched for,
// durably: a voucher that forgot one could vouch for another.
func (l Layout) WriteVouched(v map[string]string) error {
	if err := writeFileSync(filepath.Join(l.Dir, vouchedFile), mustJSON(v)); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}
