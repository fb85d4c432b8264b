package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSchemaCoversValues checks that values.schema.json declares exactly
// the values values.yaml has: the schema refuses unknown keys, so a value
// missing from it could not be set, and one missing from values.yaml
// would be undocumented (the README is generated from values.yaml).
func TestSchemaCoversValues(t *testing.T) {
	t.Parallel()
	var schema, values map[string]any
	readInto(t, "values.schema.json", &schema)
	readInto(t, "values.yaml", &values)
	var inSchema, inValues []string
	var walk func(s map[string]any, v any, prefix string)
	walk = func(s map[string]any, v any, prefix string) {
		props, _ := s["properties"].(map[string]any)
		if s["additionalProperties"] != false {
			t.Errorf("schema %q: additionalProperties is not false: a misspelt key would pass", prefix)
		}
		vm, _ := v.(map[string]any)
		for k, sub := range props {
			inSchema = append(inSchema, prefix+k)
			if sm, ok := sub.(map[string]any); ok && sm["properties"] != nil {
				walk(sm, vm[k], prefix+k+".")
			}
		}
		for k := range vm {
			inValues = append(inValues, prefix+k)
		}
	}
	walk(schema, values, "")
	sort.Strings(inSchema)
	sort.Strings(inValues)
	if !slices.Equal(inSchema, inValues) {
		t.Errorf("the schema declares\n%v\nvalues.yaml has\n%v", inSchema, inValues)
	}
}

// readInto reads the chart's file name, YAML or JSON, into v.
func readInto(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Ext(name) == ".json" {
		err = json.Unmarshal(b, v)
	} else {
		err = yaml.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
