package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RateLimitDraft names the version of the IETF draft whose RateLimit-Policy
// and RateLimit field syntax the middleware writes (23 May 2026). Both are
// Structured Field Lists of one Item each: a String naming the policy, with
// Integer parameters.
//
//	RateLimit-Policy: "orders";q=5;w=60   quota q units per window w seconds
//	RateLimit: "orders";r=0;t=59          r units available now; t, the
//	                                      effective window, in seconds
//
// The draft is not an RFC and has changed its syntax before (drafts up to
// -06 used RateLimit-Limit, -Remaining and -Reset); clients should rely on
// Retry-After, which RFC 9110 standardises.
const RateLimitDraft = "draft-ietf-httpapi-ratelimit-headers-11"

// Header names the middleware writes.
const (
	headerRetryAfter      = "Retry-After"
	headerRateLimitPolicy = "RateLimit-Policy"
	headerRateLimit       = "RateLimit"
)

// errPolicyName: a policy name must be a non-empty Structured Field String.
var errPolicyName = errors.New("policy name must be non-empty printable ASCII")

// checkPolicyName rejects names a Structured Field String cannot carry.
func checkPolicyName(name string) error {
	if name == "" {
		return errPolicyName
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("%w: byte %#x at %d", errPolicyName, name[i], i)
		}
	}
	return nil
}

// sfString quotes s as a Structured Field String (RFC 9651 section 4.1.6):
// backslash and double quote are escaped. s passed checkPolicyName.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// policyField is the RateLimit-Policy value of a quota per window. The
// draft's w is a non-zero integer of seconds, so windows are rounded up to
// at least one second.
func policyField(name string, quota int64, window time.Duration) string {
	w := max(durationSeconds(window), 1)
	return sfString(name) + ";q=" + strconv.FormatInt(quota, 10) + ";w=" + strconv.FormatInt(w, 10)
}

// rateLimitField is the RateLimit value of a decision: r is what remains.
// The effective window t ("the time within which the client can use no more
// than the available quota") is known exactly only for a refusal: the same
// delay as Retry-After, which the draft requires t not to exceed. An allowed
// reply says when the whole budget is back, not when the next unit is, so
// t is left out there (it is optional) rather than overstated.
func rateLimitField(name string, d Decision) string {
	s := sfString(name) + ";r=" + strconv.FormatInt(max(d.Remaining, 0), 10)
	if !d.Allowed && d.RetryAfter >= 0 {
		s += ";t=" + strconv.FormatInt(retryAfterSeconds(d.RetryAfter), 10)
	}
	return s
}

// retryAfterSeconds is a delay as Retry-After's delay-seconds (RFC 9110
// section 10.2.3): whole seconds, rounded up, so a client that waits that
// long is never early.
func retryAfterSeconds(d time.Duration) int64 {
	return max(durationSeconds(d), 0)
}
