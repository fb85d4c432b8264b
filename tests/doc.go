// Package tests holds rlserver's end-to-end tests: they build the real
// binary, start it on a free loopback port and drive it with real clients
// (go-redis, raw sockets, redis-cli), some side by side with redis-server.
//
//	go test ./tests/
//
// Environment:
//
//	RLSERVER_E2E_DURABLE=1    run every server durable (Raft shards on disk), not --in-memory
//	RLSERVER_BIN=path         run that rlserver binary rather than build ./cmd/rlserver
//	RLSERVER_REQUIRE_TOOLS=1  fail, rather than skip, when redis-cli or redis-server is missing
package tests
