// Package httpapi serves rlserver's decisions over HTTP, for callers that
// cannot keep a RESP connection: edge functions, serverless runtimes,
// languages without a good Redis client.
//
//	POST /v1/decide  one limit, or several decided as one (RL.ALL); with
//	                 "reserve", a reservation (RL.RESERVE)
//	POST /v1/settle  a reservation settled at its actual cost (RL.SETTLE)
//
// A request's JSON is turned into the Redis-protocol command it stands for
// and parsed by package commands, as a RESP client's is: the same checks,
// the same error texts, the same engine commands. It is submitted to the
// shard that owns its key through the Shards interface, which a node that
// does not lead that shard forwards to the one that does. The reply is the
// decision as JSON, with the IETF RateLimit-Policy and RateLimit fields and
// Retry-After; an error is an RFC 9457 problem. Requests authenticate as
// the RESP server's ACL users (HTTP Basic, or a bearer token that is a
// user's password) and are checked against their permissions; the port
// speaks TLS with the RESP TLS port's config, HTTP/1.1 with keep-alive and
// HTTP/2. docs/http.md describes the API, docs/openapi.yaml defines it.
package httpapi
