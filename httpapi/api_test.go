package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server/acl"
)

// t0 is the start of a minute.
const t0 = 1_700_000_040_000

// fixture is an API on four memory shards at a fixed time.
type fixture struct {
	t      *testing.T
	api    *Server
	srv    *httptest.Server
	shards *cluster.MemoryShards
	clock  *cluster.DebugClock
}

func newFixture(t *testing.T, users *acl.Users) *fixture {
	t.Helper()
	clock := &cluster.DebugClock{}
	clock.Set(t0)
	shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 4, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shards.Close() })
	if users == nil {
		users = acl.New("")
	}
	api := New(Config{Shards: shards, Users: users, RequestTimeout: time.Second, MaxKeyLen: 64, MaxBodyLen: 4096})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &fixture{t: t, api: api, srv: srv, shards: shards, clock: clock}
}

// post sends body to path with JSON's content type and the headers hdr
// (pairs), and returns the response and its body.
func (f *fixture) post(path, body string, hdr ...string) (*http.Response, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// decide posts to /v1/decide and wants a 200 with the JSON want.
func (f *fixture) decide(body, want string) *http.Response {
	f.t.Helper()
	res, got := f.post(pathDecide, body)
	if res.StatusCode != http.StatusOK || string(bytes.TrimSpace(got)) != want {
		f.t.Fatalf("POST %s %s:\n got %d %s\nwant 200 %s", pathDecide, body, res.StatusCode, got, want)
	}
	return res
}

// problem posts body to path and wants a problem of status whose detail
// contains detail.
func (f *fixture) problem(path, body string, status int, detail string, hdr ...string) Problem {
	f.t.Helper()
	res, got := f.post(path, body, hdr...)
	var p Problem
	if err := json.Unmarshal(got, &p); err != nil || res.StatusCode != status || p.Status != status ||
		res.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(p.Detail, detail) {
		f.t.Fatalf("POST %s %s: %d %s, want %d with %q", path, body, res.StatusCode, got, status, detail)
	}
	return p
}

const token = `"algorithm":"token","parameters":{"capacity":1000,"refill_tokens":1000,"refill_ms":60000}`

// The example over HTTP: a FORCE charge, the debt's refusal with
// its headers, a reservation settled at 1,200, once.
func TestDecideAndSettle(t *testing.T) {
	f := newFixture(t, nil)
	res := f.decide(`{"key":"chat:ada",`+token+`,"cost":1200,"force":true}`,
		`{"allowed":false,"limit":1000,"remaining":-200,"retry_after_ms":12000,"reset_after_ms":72000}`)
	if res.Header.Get("RateLimit-Policy") != `"token";q=1000;w=60` || res.Header.Get("RateLimit") != `"token";r=0;t=12` ||
		res.Header.Get("Retry-After") != "12" {
		t.Fatalf("headers: %v", res.Header)
	}
	f.decide(`{"key":"chat:ada",`+token+`}`,
		`{"allowed":false,"limit":1000,"remaining":-200,"retry_after_ms":12060,"reset_after_ms":72000}`)

	res, b := f.post(pathDecide, `{"key":"chat:bob",`+token+`,"cost":100,"reserve":true,"ttl_ms":300000}`)
	var r struct {
		Allowed bool
		ID      string `json:"reservation_id"`
	}
	if err := json.Unmarshal(b, &r); err != nil || res.StatusCode != 200 || !r.Allowed || !strings.HasSuffix(r.ID, ":chat:bob") {
		t.Fatalf("reserve: %d %s", res.StatusCode, b)
	}
	settle := `{"id":` + string(must(json.Marshal(r.ID))) + `,"actual":1200}`
	for range 2 {
		res, b := f.post(pathSettle, settle)
		if res.StatusCode != 200 || string(bytes.TrimSpace(b)) != `{"allowed":false,"limit":1000,"remaining":-200,"retry_after_ms":12000,"reset_after_ms":72000}` ||
			res.Header.Get("RateLimit") != `"reservation";r=0;t=12` {
			t.Fatalf("settle: %d %s %v", res.StatusCode, b, res.Header)
		}
	}
	f.decide(`{"key":"chat:bob",`+token+`,"cost":5,"reserve":true}`,
		`{"allowed":false,"limit":1000,"remaining":-200,"retry_after_ms":12300,"reset_after_ms":72000,"reservation_id":null}`)
	f.problem(pathSettle, `{"id":"{x}5:chat:bob","actual":1}`, http.StatusNotFound, "no such reservation")
}

func TestDecideForms(t *testing.T) {
	f := newFixture(t, nil)
	f.decide(`{"key":"q","algorithm":"QUOTA","parameters":{"limit":10,"period":"DAY","offset":60},"cost":3}`,
		`{"allowed":true,"limit":10,"remaining":7,"retry_after_ms":0,"reset_after_ms":2760000}`)
	f.decide(`{"key":"s","algorithm":"shape","parameters":{"capacity":3,"leak_tokens":1,"leak_ms":1000},"cost":5,"partial":true}`,
		`{"allowed":true,"limit":3,"remaining":0,"retry_after_ms":0,"reset_after_ms":3000,"granted":3,"delay_ms":0}`)
	res := f.decide(`{"limits":[{"key":"{u}m","algorithm":"fixed","parameters":{"limit":10,"window_ms":60000},"name":"minute"},`+
		`{"key":"{u}d","algorithm":"sliding","parameters":{"limit":5,"window_ms":86400000}}],"cost":6}`,
		`{"allowed":false,"limit":5,"remaining":5,"retry_after_ms":-1,"reset_after_ms":0,"limits":[`+
			`{"allowed":true,"limit":10,"remaining":10,"retry_after_ms":0,"reset_after_ms":0},`+
			`{"allowed":false,"limit":5,"remaining":5,"retry_after_ms":-1,"reset_after_ms":0}]}`)
	if res.Header.Get("RateLimit-Policy") != `"minute";q=10;w=60, "sliding";q=5;w=86400` || res.Header.Get("Retry-After") != "" {
		t.Fatalf("headers: %v", res.Header)
	}
	set := engine.Command{Op: engine.OpPolicySet, Value: []byte("orders"), Args: [4]int64{3, 60_000, 0, int64(engine.OpFixed)}}
	for shard := range f.shards.Shards() {
		run1(t, f, shard, set)
	}
	res = f.decide(`{"key":"user:ada","policy":"orders","cost":2}`,
		`{"allowed":true,"limit":3,"remaining":1,"retry_after_ms":0,"reset_after_ms":60000,"shadow_denied":false}`)
	if res.Header.Get("RateLimit-Policy") != `"orders";q=3` {
		t.Fatalf("a policy's headers: %v", res.Header)
	}
	f.problem(pathDecide, `{"key":"user:ada","policy":"nope"}`, 400, "no such policy 'nope'")
	f.problem(pathDecide, `{"key":"user:ada",`+token+`}`, http.StatusConflict,
		"Operation against a key holding the wrong kind of value")
}

// Bad input is a 400 that says what is wrong; the protocol's own mistakes
// have their statuses.
func TestBadRequests(t *testing.T) {
	f := newFixture(t, nil)
	for body, detail := range map[string]string{
		``:                                     "the body is empty",
		`[]`:                                   "the body must be an object",
		`{"key":"k",` + token + `} {}`:         "more than one JSON value",
		`{"key":"k",` + token + `,"costs":1}`:  `unknown field "costs"`,
		`{"key":"k",` + token + `,"cost":1.5}`: "cost must be an integer",
		`{"key":"k",` + token + `,"cost":"5"}`: "cost must be an integer, not string",
		`{` + token + `}`:                      "key is required",
		`{"key":"k"}`:                          "algorithm is required",
		`{"key":"k","algorithm":"bucket"}`:     `algorithm "bucket" is none of fixed, gcra, leaky, log, quota, shape, sliding, token`,
		`{"key":"k","algorithm":"token","parameters":{"capacity":1}}`:                   "parameters.refill_tokens is required: token takes capacity, refill_tokens, refill_ms",
		`{"key":"k","algorithm":"fixed","parameters":{"limit":1,"window":1}}`:           "parameters.window is not a parameter of fixed, which takes limit, window_ms",
		`{"key":"k","algorithm":"fixed","parameters":{"limit":1,"window_ms":1e3}}`:      "parameters.window_ms must be an integer, not 1e3",
		`{"key":"k","algorithm":"fixed","parameters":{"limit":0,"window_ms":1000}}`:     "limit must be an integer from 1 to 1000000000000000",
		`{"key":"k","algorithm":"quota","parameters":{"limit":1,"period":"FORTNIGHT"}}`: "no such period: use DAY, WEEK, MONTH or YEAR",
		`{"key":"k","algorithm":"quota","parameters":{"limit":1,"period":1}}`:           "parameters.period must be one of DAY, WEEK, MONTH, YEAR",
		`{"key":"k",` + token + `,"partial":true,"force":true}`:                         "FORCE charges the whole cost: it excludes PARTIAL",
		`{"key":"k",` + token + `,"reserve":true,"cost":0}`:                             "cost must be an integer from 1 to 1000000000000000",
		`{"key":"k","policy":"p","reserve":true}`:                                       "reserve takes an algorithm and its parameters, not a policy",
		`{"key":"k",` + token + `,"ttl_ms":5}`:                                          "ttl_ms is reserve's",
		`{"key":"` + strings.Repeat("k", 65) + `",` + token + `}`:                       "longer than the 64 bytes allowed (--max-key-len)",
		`{"limits":[{"key":"a",` + token + `},{"key":"b",` + token + `}]}`:              "must hash to one slot",
		`{"key":"k","limits":[{"key":"a",` + token + `}]}`:                              "either one limit",
		`{"limits":[{"key":"{a}1",` + token + `},{"key":"{a}1",` + token + `}]}`:        "names the key '{a}1' twice",
		`{"key":"k","algorithm":"token","policy":"p","parameters":{"capacity":1}}`:      "give an algorithm or a policy, not both",
	} {
		f.problem(pathDecide, body, http.StatusBadRequest, detail)
	}
	f.problem(pathSettle, `{"id":"k","actual":1}`, 400, "invalid reservation id")
	f.problem(pathSettle, `{"id":"{a}1:k"}`, 400, "actual is required")
	f.problem(pathSettle, `{"id":"{a}1:k","actual":-1}`, 400, "actual must be an integer from 0 to")
	f.problem(pathDecide, `{"key":"`+strings.Repeat("x", 5000)+`"}`, http.StatusRequestEntityTooLarge, "longer than the 4096 bytes allowed")
	f.problem(pathDecide, `{}`, http.StatusUnsupportedMediaType, "Content-Type: application/json", "Content-Type", "text/plain")
	f.problem("/v2/decide", `{}`, http.StatusNotFound, "no such endpoint")
	res, _ := f.srv.Client().Get(f.srv.URL + pathDecide)
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d %v", res.StatusCode, res.Header)
	}
}

// Requests act as ACL users: HTTP Basic, a bearer token that is a user's
// password, or the default user; their permissions and key patterns apply.
func TestUsers(t *testing.T) {
	users, err := acl.Parse(strings.NewReader("user default on >secret ~* +@all\n"+
		"user edge on >edge-token ~chat:* +rl.token +rl.settle +rl.reserve\nuser off off >x ~* +@all\n"), "users.acl")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, users)
	body := `{"key":"chat:ada",` + token + `}`
	f.problem(pathDecide, body, http.StatusUnauthorized, "NOAUTH")
	f.problem(pathDecide, body, http.StatusUnauthorized, "WRONGPASS", "Authorization", "Bearer nope")
	f.problem(pathDecide, body, http.StatusUnauthorized, "WRONGPASS", "Authorization", basic("off", "x"))
	f.problem(pathDecide, body, http.StatusUnauthorized, "neither Basic credentials nor a Bearer token", "Authorization", "Digest x")
	for _, auth := range []string{"Bearer edge-token", basic("edge", "edge-token"), "Bearer secret", basic("default", "secret")} {
		if res, b := f.post(pathDecide, body, "Authorization", auth); res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", auth, res.StatusCode, b)
		}
	}
	f.problem(pathDecide, `{"key":"user:ada",`+token+`}`, http.StatusForbidden, "No permissions to access a key", "Authorization", "Bearer edge-token")
	f.problem(pathDecide, `{"key":"chat:ada","algorithm":"fixed","parameters":{"limit":1,"window_ms":1}}`, http.StatusForbidden,
		"has no permissions to run the 'rl.fixed' command", "Authorization", "Bearer edge-token")
	f.problem(pathSettle, `{"id":"{a}1:user:ada","actual":1}`, http.StatusForbidden, "No permissions to access a key", "Authorization", "Bearer edge-token")
}

// Protected mode refuses a remote request while the default user has no
// password, as it refuses a remote RESP client.
func TestProtectedMode(t *testing.T) {
	f := newFixture(t, nil)
	f.api.cfg.ProtectedMode = true
	req := httptest.NewRequest(http.MethodPost, pathDecide, strings.NewReader(`{"key":"k",`+token+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "192.0.2.7:40000"
	rec := httptest.NewRecorder()
	f.api.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "protected mode") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if res, b := f.post(pathDecide, `{"key":"k",`+token+`}`); res.StatusCode != 200 { // from loopback
		t.Fatalf("from loopback: %d %s", res.StatusCode, b)
	}
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// run1 applies one command on shard, failing the test on an error.
func run1(t *testing.T, f *fixture, shard int, c engine.Command) engine.Result {
	t.Helper()
	out, err := cluster.Do(t.Context(), f.shards, shard, c)
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}
