package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

// closedAddr is a loopback address nothing listens on: a dead rlserver.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type silentRedisLog struct{}

func (silentRedisLog) Printf(context.Context, string, ...any) {}

// With rlserver down, the API keeps limiting with its local fallback: one
// instance holds the whole quota of 5 a minute.
func TestOrdersWithRLServerDown(t *testing.T) {
	redis.SetLogger(silentRedisLog{}) // the refused dials are the point
	rdb := newRedis([]string{closedAddr(t)})
	defer rdb.Close()
	app, err := newApp(appConfig{limiter: client.New(rdb), unavailable: client.FailLocal, instances: 1, timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	defer srv.Close()
	post := func(apiKey string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", nil)
		req.Header.Set("X-Api-Key", apiKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 5 {
		if resp := post("key-ada-123"); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("order %d: %d", i+1, resp.StatusCode)
		}
	}
	resp := post("key-ada-123")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("RateLimit-Policy") != `"orders";q=5;w=60` || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("sixth order: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := post("key-made-up"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown API key: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/orders", nil)
	if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /orders: %v %v", resp, err)
	}
}

func TestParseFailMode(t *testing.T) {
	for s, want := range map[string]client.FailMode{"open": client.FailOpen, "closed": client.FailClosed, "local": client.FailLocal} {
		if got, err := parseFailMode(s); err != nil || got != want {
			t.Errorf("%s: %v %v", s, got, err)
		}
	}
	if _, err := parseFailMode("maybe"); err == nil {
		t.Error("maybe: no error")
	}
}
