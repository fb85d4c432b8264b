// Command generate writes what the chart derives from other files: its
// README.md from values.yaml's comments (package readme), and its copies of
// ops/'s dashboard and alert rules, which helm can only read inside the
// chart. The chart's tests fail when any of them is stale.
//
//	cd deploy/helm/test && go run ./generate
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlserver/rlserver/deploy/helm/test/chart"
	"github.com/rlserver/rlserver/deploy/helm/test/readme"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := chart.Dir()
	values, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return err
	}
	desc, err := Description(dir)
	if err != nil {
		return err
	}
	md, err := readme.Generate(desc, values)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), md, 0o644); err != nil {
		return err
	}
	root := filepath.Join(dir, "..", "..", "..")
	for copied, original := range chart.OpsFiles() {
		b, err := os.ReadFile(filepath.Join(root, original))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, copied), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Description is Chart.yaml's description.
func Description(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var meta struct {
		Description string `json:"description"`
	}
	err = yaml.Unmarshal(b, &meta)
	return meta.Description, err
}
