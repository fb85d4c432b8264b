// Package sfv writes the pieces of HTTP Structured Field Values (RFC 9651)
// that the IETF RateLimit and RateLimit-Policy fields need, for the
// servers that write them (Envoy's rate limit service, the HTTP API).
package sfv

// String quotes s as a Structured Field String: printable ASCII only, a
// backslash or double quote escaped; any other byte becomes '?', as a name
// in a header must stay one line of ASCII.
func String(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// Seconds is ms in whole seconds, rounded up (0 for none): delay-seconds.
func Seconds(ms int64) int64 {
	return (max(ms, 0) + 999) / 1000
}
