package client

import "time"

// SlidingWindow is RL.SLIDING: the sliding-window counter of the seed
// article, computed exactly. At most Limit units in any Window, estimated
// from the current and the previous window's counts.
type SlidingWindow struct {
	Limit  int64
	Window time.Duration
}

// Policy is Limit per Window.
func (r SlidingWindow) Policy() (int64, time.Duration) { return r.Limit, r.Window }

func (r SlidingWindow) limit() (string, []any, bool) {
	return "SLIDING", []any{r.Limit, durationMs(r.Window)}, true
}

func (r SlidingWindow) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (SlidingWindow) parse(reply any) (Decision, error) { return parseDecision(reply) }

// FixedWindow is RL.FIXED: one count per Window aligned to the Unix epoch.
// Cheapest; admits up to twice Limit across a window boundary.
type FixedWindow struct {
	Limit  int64
	Window time.Duration
}

// Policy is Limit per Window.
func (r FixedWindow) Policy() (int64, time.Duration) { return r.Limit, r.Window }

func (r FixedWindow) limit() (string, []any, bool) {
	return "FIXED", []any{r.Limit, durationMs(r.Window)}, true
}

func (r FixedWindow) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (FixedWindow) parse(reply any) (Decision, error) { return parseDecision(reply) }

// SlidingLog is RL.LOG: the exact sliding log, never more than Limit units
// in any span of Window. Memory grows with Limit (at most 10,000).
type SlidingLog struct {
	Limit  int64
	Window time.Duration
}

// Policy is Limit per Window.
func (r SlidingLog) Policy() (int64, time.Duration) { return r.Limit, r.Window }

func (r SlidingLog) limit() (string, []any, bool) {
	return "LOG", []any{r.Limit, durationMs(r.Window)}, true
}

func (r SlidingLog) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (SlidingLog) parse(reply any) (Decision, error) { return parseDecision(reply) }
