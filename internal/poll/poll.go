// Package poll waits for something another goroutine or process brings
// about, by asking again until a deadline. It is the one way rlserver's
// tests wait: a guessed sleep is too short on a busy machine and too long
// everywhere else, and a hand-rolled deadline loop fails with a message of
// its own.
package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// interval is the pause between two calls of a condition: short enough to
// notice a change at once, long enough not to take a core from what is
// being waited for.
const interval = 5 * time.Millisecond

// errTimeout is wrapped by the error Wait returns once its time is up.
var errTimeout = errors.New("timed out")

// Wait calls cond until it reports done, and returns nil; once timeout has
// passed it returns an error that names what it waited for and ends with
// the error cond returned last. An error from cond means "not yet, and
// this is why": it does not end the wait.
func Wait(timeout time.Duration, what string, cond func() (done bool, err error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := cond()
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("%w after %v waiting for %s: %w", errTimeout, timeout, what, err)
			}
			return fmt.Errorf("%w after %v waiting for %s", errTimeout, timeout, what)
		}
		time.Sleep(interval)
	}
}

// Until is Wait for a test: it fails the test with Wait's error. cond runs
// on the test's goroutine, so it may fail the test itself.
func Until(t testing.TB, timeout time.Duration, what string, cond func() (done bool, err error)) {
	t.Helper()
	if err := Wait(timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}
