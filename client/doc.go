// Package client is the Go side of rlserver: typed rate-limit decisions over
// go-redis, net/http middleware that turns them into 429 responses with the
// standard headers, and a retry helper for callers of rate-limited APIs.
//
// # Decisions
//
// A [Client] wraps any [github.com/redis/go-redis/v9.UniversalClient]: a
// *redis.Client for one node, a *redis.ClusterClient for a cluster. Each
// algorithm rlserver offers is a [Rule] ([SlidingWindow], [FixedWindow],
// [SlidingLog], [TokenBucket], [LeakyBucket], [GCRA], [Shape], [Quota],
// [Throttle]), and [Client.AllowN] asks rlserver whether a key may spend a
// cost under it:
//
//	rl := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
//	d, err := rl.Allow(ctx, "user:ada", client.SlidingWindow{Limit: 100, Window: time.Minute})
//
// The [Decision] is the same for every algorithm, whether the connection
// speaks RESP2 (an array) or RESP3 (a map, go-redis v9's default).
//
// [Client.Refund] gives units back, [Client.AllowPartial] takes what is
// available of a cost, [Client.Acquire] and [Client.Release] hold leases of a
// concurrency limit, and [Client.All] decides several limits as one, all or
// nothing. Limits can also live on the server under a name ([ServerPolicy],
// [Client.SetPolicy]), checked with [Client.Check], in shadow mode to try
// them before enforcing them.
//
// # Leases
//
// [WithLeases] makes a client decide hot keys itself, from budget leases:
// a share of the key's limit that rlserver grants each process (RL.SHARE)
// by its demand, spent locally with no round trip and renewed in the
// background. The processes together never admit more than the bound
// docs/go-client.md states, and a process out of reach of rlserver goes on
// deciding from its lease until it expires, never past it.
//
// # HTTP
//
// [NewHTTPLimiter] builds middleware for one route: it finds who is calling
// with a [KeyFunc] the application supplies, asks rlserver, and answers a
// refusal with 429, Retry-After, the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 and an application/problem+json
// body. When rlserver does not answer in time the route fails open, fails
// closed or falls back to an in-process limiter ([FailMode]), and a
// [Breaker] keeps a dead server from costing a timeout on every request.
//
// # Retries
//
// [RetryTransport] is an http.RoundTripper for the other side: it retries
// 429 and 503 responses of idempotent requests, waiting as Retry-After says
// or with exponential backoff and full jitter.
package client
