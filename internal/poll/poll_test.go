package poll

import (
	"errors"
	"testing"
	"time"
)

// Wait returns as soon as the condition holds; otherwise it asks again
// until the deadline, then names what it waited for and the condition's
// last error.
func TestWait(t *testing.T) {
	notYet := errors.New("not yet")
	cases := []struct {
		name    string
		holdsAt int   // the call (from 1) at which cond holds; 0 for never
		err     error // what cond returns while it does not hold
		want    string
	}{
		{"holds at once", 1, nil, ""},
		{"holds on the third call", 3, notYet, ""},
		{"never holds", 0, nil, "timed out after 20ms waiting for the thing"},
		{"never holds, with a reason", 0, notYet, "timed out after 20ms waiting for the thing: not yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Wait(20*time.Millisecond, "the thing", func() (bool, error) {
				calls++
				return calls == tc.holdsAt, tc.err
			})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Wait: %v, want nil", err)
			case tc.want == "" && calls != tc.holdsAt:
				t.Fatalf("cond called %d times, want %d", calls, tc.holdsAt)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("Wait: %v, want %q", err, tc.want)
			case tc.want != "" && !errors.Is(err, errTimeout):
				t.Fatalf("Wait: %v does not wrap errTimeout", err)
			case tc.err != nil && tc.want != "" && !errors.Is(err, tc.err):
				t.Fatalf("Wait: %v does not wrap cond's error", err)
			case tc.want != "" && calls < 2:
				t.Fatalf("gave up after %d call, not at the deadline", calls)
			}
		})
	}
}
