// Package readme writes the chart's README.md from its values.yaml: every
// value's key, default and description, the description being the comment
// above the key. A value without a comment is an error, so that the README
// documents every value the chart takes.
package readme

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Row is one value: its dotted key, its default as JSON, its description.
type Row struct {
	Key, Default, Description string
}

// Rows reads the documented values of values.yaml, in file order. A mapping
// whose keys carry comments is a section, and each of its keys is a row;
// any other value (a scalar, a list, a mapping of undocumented keys such as
// resources) is one row.
func Rows(values []byte) ([]Row, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml is not a mapping")
	}
	var rows []Row
	err := walk(doc.Content[0], "", &rows)
	return rows, err
}

func walk(m *yaml.Node, prefix string, rows *[]Row) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, value := m.Content[i], m.Content[i+1]
		path := prefix + key.Value
		if isSection(value) {
			if err := walk(value, path+".", rows); err != nil {
				return err
			}
			continue
		}
		desc := description(key.HeadComment)
		if desc == "" {
			return fmt.Errorf("values.yaml:%d: %s has no comment to describe it", key.Line, path)
		}
		def, err := defaultOf(value)
		if err != nil {
			return fmt.Errorf("values.yaml:%d: %s: %w", key.Line, path, err)
		}
		*rows = append(*rows, Row{Key: path, Default: def, Description: desc})
	}
	return nil
}

// isSection reports whether n is a mapping whose keys are documented.
func isSection(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		if n.Content[i].HeadComment != "" {
			return true
		}
	}
	return false
}

// description is a key's comment, the paragraph right above it, as one
// line (a comment separated from the key by a blank line belongs to what
// comes before).
func description(comment string) string {
	paragraphs := strings.Split(strings.TrimSpace(comment), "\n\n")
	last := paragraphs[len(paragraphs)-1]
	var words []string
	for _, line := range strings.Split(last, "\n") {
		words = append(words, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#")))
	}
	return strings.TrimSpace(strings.Join(words, " "))
}

// defaultOf is n's value as compact JSON.
func defaultOf(n *yaml.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	if v == nil {
		return "null", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Generate returns the README: the chart's description, how to install it,
// and the table of its values.
func Generate(chartDescription string, values []byte) ([]byte, error) {
	rows, err := Rows(values)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(chartDescription))
	b.WriteString(install)
	b.WriteString("| key | default | description |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", r.Key, strings.ReplaceAll(r.Default, "|", `\|`), escape(r.Description))
	}
	return b.Bytes(), nil
}

// escape keeps a description's text as text in a table cell.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`).Replace(s)
}

const header = `# rlserver Helm chart

<!-- Generated from values.yaml by deploy/helm/test/generate: edit the comments in values.yaml,
then run "cd deploy/helm/test && go run ./generate". A test fails when this file is stale. -->

`

const install = "```sh\n" +
	"helm install rl deploy/helm/rlserver --namespace limits --create-namespace\n" +
	"kubectl -n limits rollout status statefulset/rl-rlserver\n" +
	"```\n\n" +
	"[docs/kubernetes.md](../../../docs/kubernetes.md) says how to install, upgrade, scale up and down,\n" +
	"restart, back up and restore, replace a lost volume and wire Envoy, Istio or Envoy Gateway to it,\n" +
	"and what happens in each case.\n\n" +
	"## Values\n\n"
