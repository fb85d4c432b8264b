package chart

import (
	"io/fs"
	"os"
	"path/filepath"
)

// ReadInputs reads every file of the chart and of ops/ (which it copies).
// Tests call it first: helm reads those files, not the test binary, so go
// test would not know them as the tests' inputs and would answer from its
// cache after a template changed.
func ReadInputs() error {
	for _, dir := range []string{Dir(), filepath.Join(Dir(), "..", "..", "..", "ops")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.ReadFile(p)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
