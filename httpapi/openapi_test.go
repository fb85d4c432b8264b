package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server/acl"
)

// docs/openapi.yaml is checked against the handlers: its paths and methods
// are the ones served; its request schemas have exactly the fields the
// handlers decode, each algorithm's parameters those of its command, with
// their bounds; its response schemas every field the handlers write; its
// statuses every one they answered with; and its examples are requests the
// handlers take.
func TestOpenAPIDocumentMatchesTheHandlers(t *testing.T) {
	doc := loadOpenAPI(t)
	paths := doc.m("paths")
	if got := slices.Sorted(maps.Keys(paths)); !slices.Equal(got, []string{pathDecide, pathSettle}) {
		t.Fatalf("paths %v, want the two endpoints", got)
	}
	for _, p := range []string{pathDecide, pathSettle} {
		if ops := slices.Sorted(maps.Keys(paths[p].(map[string]any))); !slices.Equal(ops, []string{"post"}) {
			t.Fatalf("%s: operations %v, want post", p, ops)
		}
	}
	schemas := doc.m("components").m("schemas")
	checkFields(t, schemas.m("DecideRequest"), reflect.TypeFor[DecideRequest]())
	checkFields(t, schemas.m("Limit"), reflect.TypeFor[Limit]())
	checkFields(t, schemas.m("SettleRequest"), reflect.TypeFor[SettleRequest]())
	checkFields(t, schemas.m("Problem"), reflect.TypeFor[Problem]())
	checkAlgorithms(t, schemas)

	users, err := acl.Parse(strings.NewReader("user default on >pw ~a* ~chat:* ~user:* ~{ada}* +@all\n"), "users.acl")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, users)
	emitted := exerciseHandlers(t, f, doc)
	exerciseStatuses(t, f)
	decision := schemas.m("Decision").m("properties")
	for k := range emitted {
		if _, ok := decision[k]; !ok && k != "limits" {
			t.Errorf("the handlers write %q, which the Decision schema does not have", k)
		}
	}
	for k := range decision {
		if !emitted[k] {
			t.Errorf("the Decision schema has %q, which no request made the handlers write", k)
		}
	}
	stats := f.api.Stats()
	for e, st := range stats[:endpointOther] {
		responses := paths[Endpoints[e]].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)
		for j, n := range st.Requests {
			if _, ok := responses[strconv.Itoa(Statuses[j])]; n > 0 && !ok {
				t.Errorf("%s answered %d, which the document does not list", Endpoints[e], Statuses[j])
			}
		}
		for code := range responses {
			if n, _ := strconv.Atoi(code); !slices.Contains(Statuses[:], n) {
				t.Errorf("%s lists %s, which the API never answers", Endpoints[e], code)
			}
		}
	}
}

// obj is a YAML mapping.
type obj map[string]any

// m is the mapping under key.
func (o obj) m(key string) obj {
	v, _ := o[key].(map[string]any)
	return v
}

func loadOpenAPI(t *testing.T) obj {
	t.Helper()
	b, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi %v", doc["openapi"])
	}
	return doc
}

// checkFields checks that schema's properties are typ's JSON fields (an
// embedded struct's included), and that no other is accepted.
func checkFields(t *testing.T, schema obj, typ reflect.Type) {
	t.Helper()
	var fields []string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for f := range typ.Fields() {
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields = append(fields, name)
		}
	}
	walk(typ)
	slices.Sort(fields)
	if got := slices.Sorted(maps.Keys(schema.m("properties"))); !slices.Equal(got, fields) {
		t.Errorf("%s: the schema has %v, the handlers %v", typ.Name(), got, fields)
	}
	if typ.Name() != "Problem" && schema["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties must be false: the handlers refuse unknown fields", typ.Name())
	}
}

// checkAlgorithms checks the algorithms and each one's parameters against
// the engine's table: names, which are required, bounds, words.
func checkAlgorithms(t *testing.T, schemas obj) {
	t.Helper()
	enum := schemas.m("Algorithm")["enum"].([]any)
	var words []string
	for _, w := range enum {
		words = append(words, w.(string))
	}
	if want := slices.Sorted(maps.Keys(algorithms)); !slices.Equal(slices.Sorted(slices.Values(words)), want) {
		t.Fatalf("algorithms %v, want %v", words, want)
	}
	seen := 0
	for _, s := range schemas {
		schema := obj(s.(map[string]any))
		word, ok := schema["x-algorithm"].(string)
		if !ok {
			continue
		}
		seen++
		op := algorithms[word]
		props := schema.m("properties")
		var names, required []string
		for _, p := range op.Spec().Params {
			in := p.InCommand()
			names = append(names, in.Name)
			if p.Keyword == "" {
				required = append(required, in.Name)
			}
			checkBounds(t, word, in, obj(props.m(in.Name)))
		}
		if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
			t.Errorf("%s: parameters %v, want %v", word, got, names)
		}
		if got := fmt.Sprint(schema["required"]); got != fmt.Sprint(required) {
			t.Errorf("%s: required %s, want %v", word, got, required)
		}
	}
	if seen != len(algorithms) {
		t.Errorf("%d parameter schemas, want one per algorithm (%d)", seen, len(algorithms))
	}
}

// checkBounds checks a parameter's schema against its bounds or words.
func checkBounds(t *testing.T, word string, p engine.Param, schema obj) {
	t.Helper()
	if p.Words != nil {
		if got := fmt.Sprint(schema["enum"]); got != fmt.Sprint(p.Words) {
			t.Errorf("%s.%s: enum %s, want %v", word, p.Name, got, p.Words)
		}
		return
	}
	if schema["type"] != "integer" || fmt.Sprint(schema["minimum"]) != fmt.Sprint(p.Min) || fmt.Sprint(schema["maximum"]) != fmt.Sprint(p.Max) {
		t.Errorf("%s.%s: %v, want an integer from %d to %d", word, p.Name, schema, p.Min, p.Max)
	}
}

// exerciseHandlers sends the document's examples and requests that make
// every field and status of the API, and returns the fields the decisions
// had.
func exerciseHandlers(t *testing.T, f *fixture, doc obj) map[string]bool {
	t.Helper()
	emitted := map[string]bool{}
	collect := func(b []byte) {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for k, v := range m {
			emitted[k] = true
			if k == "limits" {
				for _, l := range v.([]any) {
					for k := range l.(map[string]any) {
						emitted[k] = true
					}
				}
			}
		}
	}
	for _, p := range []string{pathDecide, pathSettle} {
		body := doc.m("paths").m(p).m("post").m("requestBody").m("content").m("application/json")
		for name, ex := range body.m("examples") {
			b, _ := json.Marshal(obj(ex.(map[string]any))["value"])
			res, got := f.post(p, string(b), "Authorization", "Bearer pw")
			if res.StatusCode != http.StatusOK && !(p == pathSettle || bytes.Contains(got, []byte("no such policy"))) {
				t.Errorf("%s example %s: %d %s", p, name, res.StatusCode, got)
			}
			if res.StatusCode == http.StatusOK {
				collect(got)
			}
		}
	}
	for _, body := range []string{
		`{"key":"ax","algorithm":"shape","parameters":{"capacity":3,"leak_tokens":1,"leak_ms":1000},"cost":2,"partial":true}`,
		`{"key":"ay","algorithm":"shape","parameters":{"capacity":3,"leak_tokens":1,"leak_ms":1000},"reserve":true}`,
	} {
		_, got := f.post(pathDecide, body, "Authorization", "Bearer pw")
		collect(got)
	}
	set := engine.Command{Op: engine.OpPolicySet, Value: []byte("orders"), Args: [4]int64{3, 60_000, 0, int64(engine.OpFixed)}}
	for shard := range f.shards.Shards() {
		run1(t, f, shard, set)
	}
	_, got := f.post(pathDecide, `{"key":"a:ada","policy":"orders"}`, "Authorization", "Bearer pw")
	collect(got)
	return emitted
}

// exerciseStatuses makes the handlers answer with every status a client
// can cause.
func exerciseStatuses(t *testing.T, f *fixture) {
	t.Helper()
	auth := []string{"Authorization", "Bearer pw"}
	f.problem(pathDecide, `{}`, http.StatusUnauthorized, "NOAUTH")
	f.problem(pathDecide, `{"key":"b",`+token+`}`, http.StatusForbidden, "NOPERM", auth...)
	f.problem(pathDecide, `{"key":"a"}`, http.StatusBadRequest, "algorithm is required", auth...)
	f.problem(pathDecide, `{"key":"a",`+token+`}`, http.StatusUnsupportedMediaType, "application/json", "Content-Type", "text/plain")
	f.problem(pathDecide, `{"key":"`+strings.Repeat("a", 5000)+`"}`, http.StatusRequestEntityTooLarge, "longer", auth...)
	f.post(pathDecide, `{"key":"a1","algorithm":"fixed","parameters":{"limit":3,"window_ms":1000}}`, auth...)
	f.problem(pathDecide, `{"key":"a1",`+token+`}`, http.StatusConflict, "wrong kind of value", auth...)
	_, b := f.post(pathDecide, `{"key":"a2",`+token+`,"reserve":true,"ttl_ms":10}`, auth...)
	var r struct {
		ID string `json:"reservation_id"`
	}
	_ = json.Unmarshal(b, &r)
	f.clock.Set(t0 + 10)
	f.problem(pathSettle, `{"id":`+string(must(json.Marshal(r.ID)))+`,"actual":1}`, http.StatusGone, "expired", auth...)
	f.problem(pathSettle, `{"id":"{x}1:a3","actual":1}`, http.StatusNotFound, "no such reservation", auth...)
	for _, p := range []string{pathDecide, pathSettle} {
		req, _ := http.NewRequest(http.MethodPut, f.srv.URL+p, nil)
		res, err := f.srv.Client().Do(req)
		if err != nil || res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("PUT %s: %v %v", p, res, err)
		}
		res.Body.Close()
	}
}
