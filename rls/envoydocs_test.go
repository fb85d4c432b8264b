package rls

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	bootstrap "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// Every Envoy config docs/envoy.md shows whole (a block that starts with
// static_resources) is a valid bootstrap of Envoy's v3 API: its fields
// exist, its typed configs are the types they name, and it passes the
// API's own validation rules (hits_addend's bounds and format, ...).
func TestEnvoyConfigsInTheDocsAreValid(t *testing.T) {
	doc, err := os.ReadFile("../docs/envoy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		if !strings.HasPrefix(body, "static_resources:") {
			continue
		}
		blocks++
		var tree any
		if err := yaml.Unmarshal([]byte(body), &tree); err != nil {
			t.Fatalf("config %d: %v", blocks, err)
		}
		js, err := json.Marshal(tree)
		if err != nil {
			t.Fatalf("config %d: %v", blocks, err)
		}
		var b bootstrap.Bootstrap
		if err := protojson.Unmarshal(js, &b); err != nil {
			t.Fatalf("config %d is not an Envoy bootstrap: %v", blocks, err)
		}
		if err := b.ValidateAll(); err != nil {
			t.Fatalf("config %d: %v", blocks, err)
		}
	}
	if blocks < 2 {
		t.Fatalf("%d Envoy configs in docs/envoy.md, want the service's and the stream's", blocks)
	}
}
