package client

import "time"

// fullJitter is the wait before retry number retry (0 for the first retry)
// under exponential backoff with full jitter: a uniformly random duration in
// [0, min(limit, base * 2^retry)). Full jitter spreads the clients that
// failed together over the whole interval instead of bringing them back
// together at its end. randN returns a number in [0, n).
func fullJitter(retry int, base, limit time.Duration, randN func(n int64) int64) time.Duration {
	ceiling := limit
	if retry < 62 && base <= limit>>uint(retry) {
		ceiling = base << uint(retry)
	}
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(randN(int64(ceiling)))
}
