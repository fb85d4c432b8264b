// Package tests holds rlserver's end-to-end tests: they build the real
// binary, start it on a free loopback port and drive it with real clients.
package tests
