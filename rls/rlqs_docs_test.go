package rls

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrappb "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	rlqsfilterpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rate_limit_quota/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// docBlock is the YAML block that follows marker in docs/envoy.md.
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "envoy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- "+marker)
	if !ok {
		t.Fatalf("docs/envoy.md has no %s block", marker)
	}
	_, body, _ := strings.Cut(after, "```yaml\n")
	body, _, _ = strings.Cut(body, "```\n")
	return body
}

// validated checks m and every message packed in its Any fields, at any
// depth, against their protoc-gen-validate rules, as Envoy does on load.
func validated(t *testing.T, m proto.Message, where string) {
	t.Helper()
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
	var walk func(r protoreflect.Message, where string)
	walk = func(r protoreflect.Message, where string) {
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message(), where+"."+string(fd.Name()))
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message(), where+"."+string(fd.Name())+"["+k.String()+"]")
					return true
				})
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				sub := v.Message()
				if a, ok := sub.Interface().(*anypb.Any); ok {
					inner, err := a.UnmarshalNew()
					if err != nil {
						t.Errorf("%s: %v", where, err)
						return true
					}
					validated(t, inner, where+"."+string(fd.Name())+"("+a.TypeUrl+")")
					return true
				}
				walk(sub, where+"."+string(fd.Name()))
			}
			return true
		})
	}
	walk(m.ProtoReflect(), where)
}

// The Envoy config docs/envoy.md gives for the quota service is a valid
// bootstrap, filter and bucket settings included, and the rlserver config
// beside it limits the bucket ids it builds.
func TestDocsQuotaConfigsAgree(t *testing.T) {
	var tree any
	if err := yaml.Unmarshal([]byte(docBlock(t, "rlqs-envoy-config")), &tree); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	var boot bootstrappb.Bootstrap
	if err := protojson.Unmarshal(js, &boot); err != nil {
		t.Fatalf("the Envoy config: %v", err)
	}
	validated(t, &boot, "bootstrap")
	var hcm hcmpb.HttpConnectionManager
	if err := boot.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	var filter rlqsfilterpb.RateLimitQuotaFilterConfig
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&filter); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "edge.yaml")
	if err := os.WriteFile(path, []byte(docBlock(t, "rlqs-rlserver-config")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("the rlserver config: %v", err)
	}
	for _, c := range []struct {
		bucket  map[string]string
		perUnit uint32 // 0: unlimited
		window  int64
	}{
		{map[string]string{"name": "anonymous"}, 1000, 1000},
		{map[string]string{"name": "api", "tenant": "acme"}, 6000, 60_000},
		{map[string]string{"name": "api", "tenant": "internal-billing"}, 0, 0},
	} {
		q := cfg.matchQuota(filter.GetDomain(), c.bucket)
		switch {
		case q == nil:
			t.Errorf("%v in domain %q: no quota entry", c.bucket, filter.GetDomain())
		case c.perUnit == 0 && !q.rule.Unlimited, c.perUnit != 0 && (q.rule.RequestsPerUnit != c.perUnit || q.rule.Window() != c.window):
			t.Errorf("%v: %+v", c.bucket, q.rule)
		}
	}
}
