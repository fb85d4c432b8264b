package tests

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// The decision API over HTTP (--http-port), end to end: the same decisions
// as the Redis protocol's, HTTP/2 and keep-alive, TLS with client
// certificates, and any node of a cluster answering.

// httpClient posts JSON to an HTTP API.
type httpClient struct {
	t    testing.TB
	base string
	c    *http.Client
	auth string
}

// post sends body to path and returns the status and the body.
func (h *httpClient) post(path, body string) (int, []byte) {
	h.t.Helper()
	req, _ := http.NewRequestWithContext(ctx(h.t), http.MethodPost, h.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if h.auth != "" {
		req.Header.Set("Authorization", h.auth)
	}
	res, err := h.c.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.StatusCode, b
}

// jsonDecision is a decision as the HTTP API writes it.
type jsonDecision struct {
	Allowed      bool    `json:"allowed"`
	Limit        int64   `json:"limit"`
	Remaining    int64   `json:"remaining"`
	RetryAfter   int64   `json:"retry_after_ms"`
	ResetAfter   int64   `json:"reset_after_ms"`
	Granted      *int64  `json:"granted"`
	Delay        *int64  `json:"delay_ms"`
	Reservation  *string `json:"reservation_id"`
	Status       int     `json:"status"` // a problem's
	Detail       string  `json:"detail"`
	ShadowDenied *bool   `json:"shadow_denied"`
}

// diffLimit is one of the differential test's limits: its command's word
// and parameters, and the same as JSON.
type diffLimit struct {
	word, params, json string
}

var diffLimits = []diffLimit{
	{"SLIDING", "5 3000", `"algorithm":"sliding","parameters":{"limit":5,"window_ms":3000}`},
	{"FIXED", "5 3000", `"algorithm":"fixed","parameters":{"limit":5,"window_ms":3000}`},
	{"LOG", "5 3000", `"algorithm":"log","parameters":{"limit":5,"window_ms":3000}`},
	{"TOKEN", "8 2 1000", `"algorithm":"token","parameters":{"capacity":8,"refill_tokens":2,"refill_ms":1000}`},
	{"LEAKY", "8 2 1000", `"algorithm":"leaky","parameters":{"capacity":8,"leak_tokens":2,"leak_ms":1000}`},
	{"GCRA", "4 2 1000", `"algorithm":"gcra","parameters":{"burst":4,"count":2,"period_ms":1000}`},
	{"SHAPE", "8 2 1000", `"algorithm":"shape","parameters":{"capacity":8,"leak_tokens":2,"leak_ms":1000}`},
	{"QUOTA", "20 DAY", `"algorithm":"quota","parameters":{"limit":20,"period":"DAY"}`},
}

// The same random requests, over RESP to one key and over HTTP to another,
// get the same decisions, every one: costs, refunds, peeks, PARTIAL, FORCE,
// reservations settled (or not), errors, on the debug clock.
func TestHTTPDecisionsMatchRESP(t *testing.T) {
	t.Parallel()
	srv, ports := startServerOnPorts(t, false, 1, func(ports []string) []string { return []string{"--http-port", ports[0]} })
	c := srv.Client(t, 3)
	h := &httpClient{t: t, base: "http://127.0.0.1:" + ports[0], c: &http.Client{}}
	setClock(t, c, t0)
	rng := rand.New(rand.NewPCG(46, 2))
	reserved := map[int][2]string{} // limit -> the reservation ids, RESP's and HTTP's
	var seen struct{ errors, allowed, refused, debts, reservations int }
	for step := range 1500 {
		if rng.IntN(4) == 0 {
			advanceClock(t, c, rng.Int64N(700))
		}
		i := rng.IntN(len(diffLimits))
		l := diffLimits[i]
		resp, viaHTTP := diffStep(t, c, h, rng, i, l, reserved)
		if resp != viaHTTP {
			t.Fatalf("step %d (%s): RESP %+v, HTTP %+v", step, l.word, resp, viaHTTP)
		}
		switch {
		case resp.err:
			seen.errors++
		case resp.allowed:
			seen.allowed++
		default:
			seen.refused++
		}
		if resp.remaining < 0 {
			seen.debts++
		}
		if resp.reservation {
			seen.reservations++
		}
	}
	if seen.errors < 10 || seen.allowed < 100 || seen.refused < 100 || seen.debts < 10 || seen.reservations < 50 {
		t.Fatalf("the random requests made too few of a kind: %+v", seen)
	}
	t.Logf("%+v", seen)
}

// diffOutcome is what the differential test compares of one answer.
type diffOutcome struct {
	err                                      bool
	allowed                                  bool
	limit, remaining, retry, reset, extraSum int64
	reservation                              bool
}

// diffStep sends one random request both ways and returns both outcomes.
func diffStep(t *testing.T, c doer, h *httpClient, rng *rand.Rand, i int, l diffLimit, reserved map[int][2]string) (diffOutcome, diffOutcome) {
	t.Helper()
	cost := rng.Int64N(12) - 2
	respKey, httpKey := fmt.Sprintf("resp:%d", i), fmt.Sprintf("http:%d", i)
	words := fmt.Sprintf("RL.%s %s %s COST %d", l.word, respKey, l.params, cost)
	body := fmt.Sprintf(`{"key":%q,%s,"cost":%d`, httpKey, l.json, cost)
	switch k := rng.IntN(10); {
	case k < 2:
		words, body = words+" PARTIAL", body+`,"partial":true`
	case k < 4:
		words, body = words+" FORCE", body+`,"force":true`
	case k < 6:
		words = fmt.Sprintf("RL.RESERVE %s %s %s COST %d TTL %d", l.word, respKey, l.params, max(cost, 1), 2000)
		body = fmt.Sprintf(`{"key":%q,%s,"cost":%d,"reserve":true,"ttl_ms":2000}`, httpKey, l.json, max(cost, 1))
		return diffRESP(t, c, words, i, reserved, 0), diffHTTP(t, h, "/v1/decide", body, i, reserved, 1)
	case k < 8 && reserved[i][0] != "":
		actual := rng.Int64N(14)
		ids := reserved[i]
		return diffRESP(t, c, fmt.Sprintf("RL.SETTLE %s %d", ids[0], actual), i, nil, 0),
			diffHTTP(t, h, "/v1/settle", fmt.Sprintf(`{"id":%q,"actual":%d}`, ids[1], actual), i, nil, 1)
	}
	return diffRESP(t, c, words, i, nil, 0), diffHTTP(t, h, "/v1/decide", body+"}", i, nil, 1)
}

// diffRESP sends words over RESP; a reservation's id goes in reserved[i][side].
func diffRESP(t *testing.T, c doer, command string, i int, reserved map[int][2]string, side int) diffOutcome {
	t.Helper()
	v, err := c.Do(ctx(t), words(command)...).Result()
	if err != nil {
		return diffOutcome{err: true}
	}
	m, ok := v.(map[any]any)
	if !ok {
		t.Fatalf("%s: %T %v", command, v, v)
	}
	var o diffOutcome
	o.allowed = m["allowed"] == int64(1)
	o.limit, o.remaining, o.retry, o.reset = m["limit"].(int64), m["remaining"].(int64), m["retry_after_ms"].(int64), m["reset_after_ms"].(int64)
	for _, name := range []string{"granted", "delay_ms"} {
		if n, ok := m[name].(int64); ok {
			o.extraSum += n + 1
		}
	}
	if id, ok := m["reservation_id"].(string); ok {
		o.reservation = true
		ids := reserved[i]
		ids[side] = id
		reserved[i] = ids
	}
	return o
}

// diffHTTP sends body to path; a reservation's id goes in reserved[i][side].
func diffHTTP(t *testing.T, h *httpClient, path, body string, i int, reserved map[int][2]string, side int) diffOutcome {
	t.Helper()
	status, b := h.post(path, body)
	var d jsonDecision
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s %s: %s", path, body, b)
	}
	if status != http.StatusOK {
		return diffOutcome{err: true}
	}
	o := diffOutcome{allowed: d.Allowed, limit: d.Limit, remaining: d.Remaining, retry: d.RetryAfter, reset: d.ResetAfter}
	for _, n := range []*int64{d.Granted, d.Delay} {
		if n != nil {
			o.extraSum += *n + 1
		}
	}
	if d.Reservation != nil {
		o.reservation = true
		ids := reserved[i]
		ids[side] = *d.Reservation
		reserved[i] = ids
	}
	return o
}

// HTTP/2 over TLS (ALPN) with a client certificate, HTTP/1.1 keeping one
// connection alive for many requests, and HTTP/2 without TLS (prior
// knowledge) on a plain port; the decisions are one key's, whichever way.
func TestHTTPProtocolsAndTLS(t *testing.T) {
	t.Parallel()
	s := newTLSSetup(t)
	srv, ports := startServerOnPorts(t, false, 3, func(ports []string) []string {
		return append(s.args(ports[1], "yes"), "--port", ports[0], "--http-port", ports[2])
	})
	_ = srv
	cert := tlsCertificate(t, s)
	dials := new(atomic.Int64)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true, DialContext: countingDial(dials)}
	h2 := &httpClient{t: t, base: "https://127.0.0.1:" + ports[2], c: &http.Client{Transport: tr}}
	body := `{"key":"proto",` + diffLimits[1].json + `}`
	for i := range 3 {
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, h2.base+"/v1/decide", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := h2.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var d jsonDecision
		if json.Unmarshal(b, &d); res.ProtoMajor != 2 || d.Remaining != int64(4-i) {
			t.Fatalf("TLS request %d: %s %s", i, res.Proto, b)
		}
	}
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}}}
	if _, err := noCert.Post(h2.base+"/v1/decide", "application/json", strings.NewReader(body)); err == nil {
		t.Fatal("a client without a certificate was served: --tls-auth-clients yes asks for one")
	}
	if dials.Load() != 1 {
		t.Fatalf("%d connections for three HTTP/2 requests", dials.Load())
	}
}

// tlsCertificate is the client's certificate of s.
func tlsCertificate(t *testing.T, s tlsSetup) tls.Certificate {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(s.clientCert, s.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// countingDial dials as net.Dialer does, counting the connections.
func countingDial(n *atomic.Int64) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// HTTP/1.1 keeps one connection for a hundred requests, HTTP/2 without
// TLS (prior knowledge) multiplexes them on one, and the metrics count the
// HTTP API's requests and its decisions with the Redis protocol's.
func TestHTTPKeepAliveH2CAndMetrics(t *testing.T) {
	t.Parallel()
	srv, ports := startServerOnPorts(t, false, 2, func(ports []string) []string {
		return []string{"--http-port", ports[0], "--metrics-port", ports[1]}
	})
	for _, h2c := range []bool{false, true} {
		dials := new(atomic.Int64)
		tr := &http.Transport{DialContext: countingDial(dials)}
		if h2c {
			tr.Protocols = new(http.Protocols)
			tr.Protocols.SetUnencryptedHTTP2(true)
		}
		h := &httpClient{t: t, base: "http://127.0.0.1:" + ports[0], c: &http.Client{Transport: tr}}
		for range 100 {
			if status, b := h.post("/v1/decide", fmt.Sprintf(`{"key":"ka:%v",%s}`, h2c, diffLimits[3].json)); status != 200 {
				t.Fatalf("%d %s", status, b)
			}
		}
		if dials.Load() != 1 {
			t.Fatalf("h2c %v: %d connections for 100 requests", h2c, dials.Load())
		}
	}
	_ = srv
	res, err := http.Get("http://127.0.0.1:" + ports[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`rlserver_http_requests_total{code="200",endpoint="/v1/decide"} 200`,
		`rlserver_http_request_duration_seconds_count{endpoint="/v1/decide"} 200`, `command="rl.token",outcome="allowed"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Every node of a cluster answers every request, forwarding to the leader
// of the key's shard: a limit of 30 spent through three nodes' HTTP ports
// grants exactly 30, on every shard.
func TestHTTPAnyNodeOfACluster(t *testing.T) {
	t.Parallel()
	tc := newCluster(t, 3)
	ports := rlproc.Ports(t, 3)
	for i, n := range tc.Nodes {
		n.Config.Args = append(n.Config.Args, "--http-port", fmt.Sprint(ports[i]))
	}
	tc.LaunchAsPlanned(t)
	tc.waitLeaders()
	var nodes []*httpClient
	for _, p := range ports {
		nodes = append(nodes, &httpClient{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", p), c: &http.Client{Timeout: 20 * time.Second}})
	}
	for k := range 6 { // keys on every shard
		granted := 0
		for i := range 45 {
			status, b := nodes[i%3].post("/v1/decide", fmt.Sprintf(`{"key":"node:%d","algorithm":"fixed","parameters":{"limit":30,"window_ms":1000000000000}}`, k))
			var d jsonDecision
			if err := json.Unmarshal(b, &d); err != nil || status != 200 {
				t.Fatalf("key %d request %d: %d %s", k, i, status, b)
			}
			if d.Allowed {
				granted++
			}
		}
		if granted != 30 {
			t.Fatalf("key %d: %d granted through three nodes, want 30", k, granted)
		}
	}
}
