package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/deploy/helm/test/chart"
	"sigs.k8s.io/yaml"
)

// TestREADMEIsFresh checks that the chart's README.md is what values.yaml
// generates; every value must have a comment for it to generate at all.
func TestREADMEIsFresh(t *testing.T) {
	t.Parallel()
	values, err := os.ReadFile(filepath.Join(chart.Dir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(filepath.Join(chart.Dir(), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Description string `json:"description"`
	}
	if err := yaml.Unmarshal(meta, &c); err != nil {
		t.Fatal(err)
	}
	want, err := Generate(c.Description, values)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chart.Dir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("deploy/helm/rlserver/README.md is stale: run go run ./generate in deploy/helm/test")
	}
}

// TestRowsNeedComments checks that a value without a comment is refused,
// and that sections, lists and undocumented mappings are read as the
// README shows them.
func TestRowsNeedComments(t *testing.T) {
	t.Parallel()
	rows, err := Rows([]byte(`# The file's header.

# How many.
replicas: 3
image:
  # Where from.
  repository: x
# Requests and limits.
resources:
  limits: {memory: 1Gi}
# Flags.
extraArgs: []
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Key+"="+r.Default+": "+r.Description)
	}
	want := `replicas=3: How many.|image.repository="x": Where from.|resources={"limits":{"memory":"1Gi"}}: Requests and limits.|extraArgs=[]: Flags.`
	if strings.Join(got, "|") != want {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if _, err := Rows([]byte("# Documented.\na: 1\nb: 2\n")); err == nil || !strings.Contains(err.Error(), "b has no comment") {
		t.Errorf("an undocumented value: err %v", err)
	}
}

// TestMain makes the chart's files the tests' inputs (chart.ReadInputs).
func TestMain(m *testing.M) {
	if err := chart.ReadInputs(); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
