package client

import "fmt"

// FailMode is what a route does when rlserver cannot give a decision in time
// (down, unreachable, too slow, or the Breaker is open). There is no
// default: the seed article's advice is to decide per endpoint, before the
// outage.
type FailMode int

const (
	failUnset FailMode = iota
	// FailOpen serves the request unlimited. Right for most APIs: the
	// limiter going down should not take the API down with it.
	FailOpen
	// FailClosed refuses the request with 503 (HTTPConfig.ClosedStatus).
	// For endpoints where abuse is expensive: login, sending SMS.
	FailClosed
	// FailLocal limits the request with an in-process limiter holding a
	// share of the quota (LocalFallback): still limited, only less exactly.
	FailLocal
)

// String names the mode.
func (m FailMode) String() string {
	switch m {
	case failUnset:
		return "unset"
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	case FailLocal:
		return "local"
	}
	return fmt.Sprintf("FailMode(%d)", int(m))
}
