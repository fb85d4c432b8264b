// Package tests holds rlserver's end-to-end tests: they build the real
// binary, start it on a free loopback port and drive it with real clients
// (go-redis, raw sockets, redis-cli), some side by side with redis-server.
// The container tests (image_test.go, compose_test.go, statefulset_test.go)
// build the image with deploy/build-image and run it with rootful podman
// (containers_test.go).
//
//	go test ./tests/
//
// Environment:
//
//	RLSERVER_E2E_DURABLE=1    run every server durable (Raft shards on disk), not --in-memory
//	RLSERVER_BIN=path         run that rlserver binary rather than build ./cmd/rlserver
//	RLSERVER_REQUIRE_TOOLS=1  fail, rather than skip, when redis-cli, redis-server, rootful podman or helm is missing
//	HELM=path                 the helm the StatefulSet emulation renders the chart with, rather than helm on PATH
package tests
