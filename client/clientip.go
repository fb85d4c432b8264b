package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Keying by the caller's IP address is what most public APIs do before a
// caller has authenticated, and the seed articles list how it goes wrong: a
// caller who writes its own X-Forwarded-For chooses its key (a fresh budget
// per request), everyone behind one NAT or proxy shares a key, and one IPv6
// host holds a whole /64 to rotate through. IPKey answers the first and the
// last; the second is the nature of IP keys (see docs/go-client.md).
//
// Whom to believe: the address the connection came from is the only one
// nobody can forge (TCP's handshake). When it is a proxy the operator
// trusts, the proxy's forwarding header says whom it received the request
// from; each trusted proxy appends its own peer's address, so the header is
// read from the right, hop by hop, while the hops are trusted proxies: the
// first address that is not one is the client. Everything to its left was
// written by the client or by proxies nobody vouches for, and is never read.

// HeaderXForwardedFor and HeaderForwarded are the forwarding headers IPKey
// reads: the de facto X-Forwarded-For ("client, proxy1, proxy2") and RFC
// 7239's Forwarded ("for=client, for=proxy1").
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"
)

// ErrNoClientIP: the request's client address cannot be told with
// certainty: the connection's address is not an IP address, or a trusted
// proxy's forwarding header is malformed where it must be read (an entry
// that is not an address, "unknown", an obfuscated identifier, a Forwarded
// element without for=). A malformed header is never half-believed.
var ErrNoClientIP = errors.New("client: no trustworthy client IP address")

// IPKey builds a KeyFunc (and reads a request's client address) by the
// caller's IP address. The zero value trusts no proxy and keys IPv4
// callers by their address and IPv6 callers by their /64.
type IPKey struct {
	// Trusted are the proxies (load balancers, CDNs, ingress controllers)
	// whose forwarding header is believed: only when the connection comes
	// from one of them is Header read at all, and only its entries that
	// trusted proxies appended. Leave it empty when clients connect
	// directly.
	Trusted []netip.Prefix
	// Header is the forwarding header the trusted proxies write:
	// HeaderXForwardedFor (the default) or HeaderForwarded. Only one is
	// read: a proxy that appends to one passes the other through as the
	// client wrote it.
	Header string
	// IPv6Prefix is how many leading bits of an IPv6 address make the key:
	// 64 by default (one host's or one home's allocation, which it can
	// rotate through at will), 128 for single addresses, 48 or 56 for a
	// site's.
	IPv6Prefix int
	// IPv4Prefix is the same for IPv4: 32 by default.
	IPv4Prefix int
}

// ClientIP returns a KeyFunc that keys a request by its caller's IP address
// (see IPKey), believing the forwarding header X-Forwarded-For only when the
// connection comes from one of trusted, and keying IPv6 callers by their
// /64. It panics on an invalid prefix, as regexp.MustCompile does on a bad
// expression: the list is the program's, not its input. Use IPKey.KeyFunc
// for other settings, and to have the error returned.
func ClientIP(trusted ...netip.Prefix) KeyFunc {
	k, err := IPKey{Trusted: trusted}.KeyFunc()
	if err != nil {
		panic(err)
	}
	return k
}

// KeyFunc checks k and returns the KeyFunc it describes. The partition key
// is the client address grouped by its prefix: "203.0.113.7" for a whole
// address, "2001:db8:1:2::/64" for a group. A request whose address cannot
// be told gives ErrNoClientIP (answered by HTTPConfig.OnKeyError).
func (k IPKey) KeyFunc() (KeyFunc, error) {
	k, err := k.withDefaults()
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		addr, err := k.addr(r)
		if err != nil {
			return "", err
		}
		return k.group(addr), nil
	}, nil
}

// Addr returns the request's client address as k reads it, before grouping.
func (k IPKey) Addr(r *http.Request) (netip.Addr, error) {
	k, err := k.withDefaults()
	if err != nil {
		return netip.Addr{}, err
	}
	return k.addr(r)
}

// withDefaults checks k and fills in its defaults.
func (k IPKey) withDefaults() (IPKey, error) {
	switch http.CanonicalHeaderKey(k.Header) {
	case "", HeaderXForwardedFor:
		k.Header = HeaderXForwardedFor
	case HeaderForwarded:
		k.Header = HeaderForwarded
	default:
		return k, fmt.Errorf("client: IPKey.Header %q: must be %s or %s", k.Header, HeaderXForwardedFor, HeaderForwarded)
	}
	if k.IPv6Prefix == 0 {
		k.IPv6Prefix = 64
	}
	if k.IPv4Prefix == 0 {
		k.IPv4Prefix = 32
	}
	if k.IPv6Prefix < 1 || k.IPv6Prefix > 128 || k.IPv4Prefix < 1 || k.IPv4Prefix > 32 {
		return k, fmt.Errorf("client: IPKey prefixes /%d (IPv6) and /%d (IPv4): must be from 1 to 128 and 1 to 32", k.IPv6Prefix, k.IPv4Prefix)
	}
	trusted := make([]netip.Prefix, len(k.Trusted))
	for i, p := range k.Trusted {
		if !p.IsValid() {
			return k, fmt.Errorf("client: IPKey.Trusted[%d]: invalid prefix %v", i, p)
		}
		// A proxy's IPv4 address may arrive IPv4-mapped; compare it
		// unmapped, against an unmapped prefix.
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		trusted[i] = p.Masked()
	}
	k.Trusted = trusted
	return k, nil
}

// addr is Addr for a checked k.
func (k IPKey) addr(r *http.Request) (netip.Addr, error) {
	remote, ok := parseNode(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: the connection's address %q", ErrNoClientIP, r.RemoteAddr)
	}
	if !k.trusts(remote) {
		return remote, nil
	}
	// Walk the hops from the proxy that connected back towards the client.
	client := remote
	lines := r.Header.Values(k.Header)
	for i := len(lines) - 1; i >= 0; i-- {
		hops := splitList(lines[i])
		for j := len(hops) - 1; j >= 0; j-- {
			hop, ok := k.parseHop(hops[j])
			if !ok {
				return netip.Addr{}, fmt.Errorf("%w: %s entry %q, written by the trusted proxy %v", ErrNoClientIP, k.Header, hops[j], client)
			}
			client = hop
			if !k.trusts(hop) {
				return hop, nil
			}
		}
	}
	// Every hop was a trusted proxy: the request started at the first.
	return client, nil
}

// trusts reports whether a is one of the trusted proxies.
func (k IPKey) trusts(a netip.Addr) bool {
	for _, p := range k.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// group is a's key: a whole address as itself, else its prefix.
func (k IPKey) group(a netip.Addr) string {
	bits := k.IPv6Prefix
	if a.Is4() {
		bits = k.IPv4Prefix
	}
	if bits == a.BitLen() {
		return a.String()
	}
	p, _ := a.Prefix(bits) // bits is within the address's length
	return p.String()
}

// parseHop reads one element of the header: an X-Forwarded-For node, or
// the for= parameter of a Forwarded element.
func (k IPKey) parseHop(elem string) (netip.Addr, bool) {
	if k.Header == HeaderXForwardedFor {
		return parseNode(elem)
	}
	for _, pair := range splitOutsideQuotes(elem, ';') {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || !strings.EqualFold(strings.Trim(name, " \t"), "for") {
			continue
		}
		value = strings.Trim(value, " \t")
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = strings.ReplaceAll(value[1:len(value)-1], `\`, "")
		}
		return parseNode(value)
	}
	return netip.Addr{}, false
}

// parseNode reads an address as proxies write it: "192.0.2.1",
// "192.0.2.1:4711", "2001:db8::1", "[2001:db8::1]" or "[2001:db8::1]:4711".
// IPv4-mapped IPv6 addresses are read as IPv4 and zones are dropped, so
// that one caller has one key however its address is written.
func parseNode(s string) (netip.Addr, bool) {
	s = strings.Trim(s, " \t")
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		switch {
		case perr == nil:
			a = ap.Addr()
		case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']':
			if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil || !a.Is6() {
				return netip.Addr{}, false
			}
		default:
			return netip.Addr{}, false
		}
	}
	return a.Unmap().WithZone(""), true
}

// splitList splits a header line into its comma-separated elements,
// skipping empty ones as RFC 9110's list syntax says to.
func splitList(line string) []string {
	elems := splitOutsideQuotes(line, ',')
	out := elems[:0]
	for _, e := range elems {
		if strings.Trim(e, " \t") != "" {
			out = append(out, e)
		}
	}
	return out
}

// splitOutsideQuotes splits s at every sep that is not inside a quoted
// string (Forwarded's values may be quoted, with backslash escapes).
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
