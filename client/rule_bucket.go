package client

import "time"

// TokenBucket is RL.TOKEN: at most Capacity tokens, starting full, refilled
// continuously with RefillTokens every RefillEvery. Bursts of up to Capacity,
// RefillTokens per RefillEvery on average.
type TokenBucket struct {
	Capacity     int64
	RefillTokens int64
	RefillEvery  time.Duration
}

// Policy is Capacity per the time an empty bucket takes to fill.
func (r TokenBucket) Policy() (int64, time.Duration) {
	return r.Capacity, refillTime(r.Capacity, r.RefillTokens, r.RefillEvery)
}

func (r TokenBucket) limit() (string, []any, bool) {
	return "TOKEN", []any{r.Capacity, r.RefillTokens, durationMs(r.RefillEvery)}, true
}

func (r TokenBucket) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (TokenBucket) parse(reply any) (Decision, error) { return parseDecision(reply) }

// LeakyBucket is RL.LEAKY, the leaky bucket as a meter: a level of at most
// Capacity that leaks LeakTokens every LeakEvery. rlserver does not queue;
// a caller that wants shaping waits RetryAfter.
type LeakyBucket struct {
	Capacity   int64
	LeakTokens int64
	LeakEvery  time.Duration
}

// Policy is Capacity per the time a full bucket takes to drain.
func (r LeakyBucket) Policy() (int64, time.Duration) {
	return r.Capacity, refillTime(r.Capacity, r.LeakTokens, r.LeakEvery)
}

func (r LeakyBucket) limit() (string, []any, bool) {
	return "LEAKY", []any{r.Capacity, r.LeakTokens, durationMs(r.LeakEvery)}, true
}

func (r LeakyBucket) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (LeakyBucket) parse(reply any) (Decision, error) { return parseDecision(reply) }

// Shape is RL.SHAPE, the leaky bucket as a queue: throttling rather than
// limiting. A request is admitted while the queue (at most Capacity units,
// leaking LeakTokens every LeakEvery) has room for it, and Decision.Delay
// is how long it should wait first, for the units queued ahead of it to
// leak out; it is refused only when the queue is full. The caller does the
// waiting: rlserver holds nothing.
type Shape struct {
	Capacity   int64
	LeakTokens int64
	LeakEvery  time.Duration
}

// Policy is Capacity per the time a full queue takes to drain.
func (r Shape) Policy() (int64, time.Duration) {
	return r.Capacity, refillTime(r.Capacity, r.LeakTokens, r.LeakEvery)
}

func (r Shape) limit() (string, []any, bool) {
	return wordShape, []any{r.Capacity, r.LeakTokens, durationMs(r.LeakEvery)}, true
}

func (r Shape) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (Shape) parse(reply any) (Decision, error) { return parseDecision(reply, extraDelay) }

// wordShape is RL.SHAPE's algorithm word, the one whose reply has delay_ms.
const wordShape = "SHAPE"

// GCRA is RL.GCRA, with redis-cell's parameters in milliseconds: Count
// requests per Period, and Burst + 1 at once.
type GCRA struct {
	Burst  int64
	Count  int64
	Period time.Duration
}

// Policy is Burst + 1 per the time they take to be re-emitted.
func (r GCRA) Policy() (int64, time.Duration) {
	return r.Burst + 1, refillTime(r.Burst+1, r.Count, r.Period)
}

func (r GCRA) limit() (string, []any, bool) {
	return "GCRA", []any{r.Burst, r.Count, durationMs(r.Period)}, true
}

func (r GCRA) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (GCRA) parse(reply any) (Decision, error) { return parseDecision(reply) }

// Throttle is CL.THROTTLE, redis-cell's command: Count requests per Period
// (sent in whole seconds), MaxBurst + 1 at once. Its reply is redis-cell's,
// in seconds, so RetryAfter and ResetAfter are whole seconds (redis-cell
// rounds them up).
type Throttle struct {
	MaxBurst int64
	Count    int64
	Period   time.Duration
}

// Policy is MaxBurst + 1 per the time they take to be re-emitted.
func (r Throttle) Policy() (int64, time.Duration) {
	period := time.Duration(durationSeconds(r.Period)) * time.Second
	return r.MaxBurst + 1, refillTime(r.MaxBurst+1, r.Count, period)
}

// limit reports that Throttle has no RL.* form: RL.ALL and policies take
// RL.GCRA, the same algorithm in milliseconds.
func (Throttle) limit() (string, []any, bool) { return "", nil, false }

func (r Throttle) command(key string, cost int64) []any {
	return []any{"CL.THROTTLE", key, r.MaxBurst, r.Count, durationSeconds(r.Period), cost}
}

func (Throttle) parse(reply any) (Decision, error) { return parseThrottle(reply) }
