// Package script runs Redis's Lua scripts (EVAL, EVALSHA and their
// read-only forms; commands/scripting.go parses them) inside a shard, so
// that the limiter libraries that ship their algorithm as a script run
// unchanged.
//
// A script runs on gopher-lua in Redis 7's sandbox (interp.go) with Lua
// 5.1's libraries as Redis's Lua has them, written here rather than taken
// from gopher-lua (baselib.go, stringlib.go, format.go, pattern.go,
// tablelib.go, mathlib.go; numbers and strings converted as Lua converts
// them, luanum.go, args.go, arith.go), calls redis.call and redis.pcall
// into the shard's own keyspace (redislib.go), and has its values
// converted between Lua and the protocol as Redis converts them
// (convert.go, boxes.go). It is replicated as the command it
// is, so every replica must reach the same result: a run's budget is
// counted in instructions and bytes allocated, never timed (meter.go).
// Runner (runner.go) implements engine.ScriptRunner, the interface the
// engine declares; the engine stays free of Lua.
package script
