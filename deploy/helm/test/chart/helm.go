// Package chart renders the rlserver Helm chart with the helm binary and
// reads what it renders as the Kubernetes API would: every object decoded
// strictly into its typed API struct. The chart's tests use it, and so does
// the StatefulSet emulation, which runs the rendered pod spec in containers
// (./render prints what it needs).
package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// ErrNoHelm says that no helm binary was found.
var ErrNoHelm = errors.New("no helm binary: set $HELM or put helm on PATH " +
	"(go install helm.sh/helm/v4/cmd/helm@v4.3.2, as .ci/run does)")

// FindHelm returns the helm binary: $HELM, else helm on PATH.
func FindHelm() (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		if _, err := os.Stat(h); err != nil {
			return "", fmt.Errorf("$HELM: %w", err)
		}
		return h, nil
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		return "", ErrNoHelm
	}
	return h, nil
}

// Dir is the chart's directory, deploy/helm/rlserver, found from this
// source file, so that tests and commands work from any directory of the
// checkout.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "rlserver")
}

// Release names a rendering: the release, its namespace, and values in
// YAML, as a values file gives them (empty: the chart's defaults), then
// helm's own --values files and --set arguments, applied after it.
type Release struct {
	Name       string
	Namespace  string
	Values     string
	ValueFiles []string
	Set        []string
}

// Template runs helm template for r and returns the manifests; an error
// carries helm's message (a value the schema or the chart refuses).
func Template(ctx context.Context, helm string, r Release) ([]byte, error) {
	args := []string{"template", r.Name, Dir(), "--namespace", r.Namespace}
	if r.Values != "" {
		f, err := os.CreateTemp("", "rlserver-values-*.yaml")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		if _, err := f.WriteString(r.Values); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		args = append(args, "--values", f.Name())
	}
	for _, f := range r.ValueFiles {
		args = append(args, "--values", f)
	}
	for _, s := range r.Set {
		args = append(args, "--set", s)
	}
	return run(ctx, helm, args...)
}

// Lint runs helm lint --strict on the chart.
func Lint(ctx context.Context, helm string) ([]byte, error) {
	return run(ctx, helm, "lint", "--strict", Dir())
}

func run(ctx context.Context, helm string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %v: %w\n%s%s", args[0], err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes(), nil
}
