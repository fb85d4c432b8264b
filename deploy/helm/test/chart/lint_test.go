package chart

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestLint runs helm lint --strict: the chart's metadata, its templates
// with the default values, and the values against the schema.
func TestLint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	out, err := Lint(ctx, helm(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("0 chart(s) failed")) || bytes.Contains(out, []byte("[WARNING]")) || bytes.Contains(out, []byte("[ERROR]")) {
		t.Errorf("helm lint --strict:\n%s", out)
	}
}

// TestFilesMatchOps checks that the chart's copies of the dashboard and the
// alert rules are ops/'s (helm reads only files inside the chart; refresh
// them with go run ./generate).
func TestFilesMatchOps(t *testing.T) {
	t.Parallel()
	for copied, original := range OpsFiles() {
		a, err := os.ReadFile(filepath.Join(Dir(), copied))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(repoRoot(), original))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run go run ./generate in deploy/helm/test", copied, original)
		}
	}
}
