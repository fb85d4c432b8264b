package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	// The load balancers (10.0.0.0/8) and a CDN's edge (198.51.100.0/24)
	// are trusted; 203.0.113.0/24 and 2001:db8::/32 are the internet.
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("fd00::/8")}
	xff := IPKey{Trusted: trusted}
	fwd := IPKey{Trusted: trusted, Header: "forwarded"}
	tests := []struct {
		name    string
		k       IPKey
		remote  string
		headers map[string][]string
		want    string // the key; "" for ErrNoClientIP
	}{
		{"direct caller", xff, "203.0.113.7:4711", nil, "203.0.113.7"},
		{"direct caller spoofs X-Forwarded-For", xff, "203.0.113.7:4711",
			map[string][]string{"X-Forwarded-For": {"192.0.2.1"}}, "203.0.113.7"},
		{"direct caller spoofs Forwarded", fwd, "203.0.113.7:4711",
			map[string][]string{"Forwarded": {"for=192.0.2.1"}}, "203.0.113.7"},
		{"no proxy trusted: the header is never read", IPKey{}, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "10.0.0.5"},
		{"behind the load balancer", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"spoofed entries left of the real one are not read", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"1.1.1.1, 10.9.9.9, 203.0.113.7"}}, "203.0.113.7"},
		{"a fresh spoofed address per request keeps the same key", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"192.0.2.99, 203.0.113.7"}}, "203.0.113.7"},
		{"two trusted hops: CDN then load balancer", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7, 198.51.100.20"}}, "203.0.113.7"},
		{"header split over several lines is one list", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"192.0.2.1, 203.0.113.7", "198.51.100.20"}}, "203.0.113.7"},
		{"ports and spaces", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {" 203.0.113.7:51234 ,\t198.51.100.20:443 "}}, "203.0.113.7"},
		{"empty elements are skipped", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7,, "}}, "203.0.113.7"},
		{"a trusted proxy with no header made the request itself", xff, "10.0.0.5:80", nil, "10.0.0.5"},
		{"every hop trusted: the first one", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"10.1.1.1, 198.51.100.20"}}, "10.1.1.1"},
		{"malformed where it must be read", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7, not-an-address"}}, ""},
		{"malformed by the client is never reached", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"<script>, 203.0.113.7"}}, "203.0.113.7"},
		{"a spoofed trusted-looking hop behind a malformed one", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7, 10.0.0.9, garbage"}}, ""},
		{"unknown is not an address", xff, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"unknown"}}, ""},
		{"IPv6 grouped by /64", xff, "[2001:db8:1:2:aaaa::1]:443", nil, "2001:db8:1:2::/64"},
		{"IPv6 rotated within the /64: same key", xff, "[2001:db8:1:2:ffff:ffff:ffff:fffe]:443", nil, "2001:db8:1:2::/64"},
		{"IPv6 another /64", xff, "[2001:db8:1:3::1]:443", nil, "2001:db8:1:3::/64"},
		{"IPv6 per address", IPKey{IPv6Prefix: 128}, "[2001:db8:1:2::1]:443", nil, "2001:db8:1:2::1"},
		{"IPv4 grouped by /24", IPKey{IPv4Prefix: 24}, "203.0.113.7:1", nil, "203.0.113.0/24"},
		{"IPv4-mapped IPv6 is IPv4", xff, "[::ffff:203.0.113.7]:443", nil, "203.0.113.7"},
		{"IPv4-mapped trusted proxy", xff, "[::ffff:10.0.0.5]:443",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"zone dropped", xff, "[fe80::1%eth0]:443", nil, "fe80::/64"},
		{"IPv6 behind an IPv6 proxy", xff, "[fd00::5]:80",
			map[string][]string{"X-Forwarded-For": {"[2001:db8:1:2::7]:5555"}}, "2001:db8:1:2::/64"},
		{"connection address not IP", xff, "@unix", nil, ""},
		{"Forwarded", fwd, "10.0.0.5:80",
			map[string][]string{"Forwarded": {`for=192.0.2.1, for=203.0.113.7;proto=https;by=10.0.0.5`}}, "203.0.113.7"},
		{"Forwarded quoted IPv6 with port, mixed case", fwd, "10.0.0.5:80",
			map[string][]string{"Forwarded": {`For="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::/64"},
		{"Forwarded quoted commas do not split", fwd, "10.0.0.5:80",
			map[string][]string{"Forwarded": {`for=203.0.113.7;ext="a, for=192.0.2.1"`}}, "203.0.113.7"},
		{"Forwarded obfuscated node", fwd, "10.0.0.5:80",
			map[string][]string{"Forwarded": {`for=_hidden`}}, ""},
		{"Forwarded unknown", fwd, "10.0.0.5:80",
			map[string][]string{"Forwarded": {`for=unknown`}}, ""},
		{"Forwarded element without for", fwd, "10.0.0.5:80",
			map[string][]string{"Forwarded": {`for=203.0.113.7, proto=https`}}, ""},
		{"Forwarded configured: X-Forwarded-For is the client's own", fwd, "10.0.0.5:80",
			map[string][]string{"X-Forwarded-For": {"192.0.2.1"}, "Forwarded": {"for=203.0.113.7"}}, "203.0.113.7"},
		{"X-Forwarded-For configured: Forwarded is the client's own", xff, "10.0.0.5:80",
			map[string][]string{"Forwarded": {"for=192.0.2.1"}, "X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := tt.k.KeyFunc()
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for name, values := range tt.headers {
				for _, v := range values {
					r.Header.Add(name, v)
				}
			}
			got, err := key(r)
			if tt.want == "" {
				if !errors.Is(err, ErrNoClientIP) {
					t.Fatalf("key = %q, %v; want ErrNoClientIP", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("key = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestIPKeyInvalid(t *testing.T) {
	for _, k := range []IPKey{
		{Header: "X-Real-IP"},
		{IPv6Prefix: 129},
		{IPv4Prefix: -1},
		{IPv4Prefix: 33},
		{Trusted: []netip.Prefix{{}}},
	} {
		if _, err := k.KeyFunc(); err == nil {
			t.Errorf("%+v: accepted", k)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("ClientIP with an invalid prefix did not panic")
		}
	}()
	ClientIP(netip.Prefix{})
}

func TestIPKeyAddr(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.5:80"
	r.Header.Set("X-Forwarded-For", "2001:db8::77")
	a, err := IPKey{Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}.Addr(r)
	if err != nil || a != netip.MustParseAddr("2001:db8::77") {
		t.Fatalf("Addr = %v, %v", a, err)
	}
}

// A request whose client address cannot be told is answered by OnKeyError
// without asking rlserver.
func TestClientIPKeyError(t *testing.T) {
	l, err := NewHTTPLimiter(HTTPConfig{
		Client: New(nil), Policy: "api", Rule: seedRule, Unavailable: FailOpen,
		Key: ClientIP(netip.MustParsePrefix("10.0.0.0/8")),
		OnKeyError: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, ErrNoClientIP) {
				t.Errorf("OnKeyError: %v", err)
			}
			w.WriteHeader(http.StatusBadRequest)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.5:80"
	r.Header.Set("X-Forwarded-For", "203.0.113.7, bogus")
	w := httptest.NewRecorder()
	l.Wrap(http.NotFoundHandler()).ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", w.Code)
	}
}
