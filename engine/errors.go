package engine

import "fmt"

// An engine error says what went wrong in a Code and a message. The code is
// the error's identity: errors.Is compares codes, so an error keeps its
// identity when it crosses the bus as its code and message, and the server
// picks the first word of the reply (Redis's ERR, WRONGTYPE, OOM) from the
// code alone. Messages are Redis's where Redis has the error, without that
// first word.

// Code identifies an engine error. Codes are written on the bus between
// nodes: add new ones at the end, never reorder.
type Code uint8

// The codes.
const (
	codeNone          Code = iota
	CodeWrongType          // a key another algorithm (or type) owns
	CodeOOM                // a new key over the memory limit
	CodeNotInteger         // a string that is not an integer
	CodeOverflow           // an increment past int64
	CodeNoPolicy           // RL.CHECK with a name no policy has
	CodeAllMember          // an RL.ALL group commands would never build
	CodeUnknownOp          // an op this engine does not know
	CodeParam              // a parameter outside its bounds
	CodeZeroRate           // CL.THROTTLE's zero rate, in redis-cell's words
	CodeNoScript           // EVALSHA of a script the cache does not hold
	CodeScript             // a script's error: the message is the whole reply, its first word included
	CodeNoSuchKey          // RENAME of a key that does not exist
	CodeNoReservation      // RL.SETTLE of a reservation unknown or forgotten
	CodeExpired            // RL.SETTLE of a reservation whose TTL ended first
	codeCount
)

// Error is an engine error.
type Error struct {
	Code Code
	Msg  string
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The engine's errors. Those with a code of their own are the identity
// every error of that code matches (errors.Is).
var (
	ErrWrongType  = &Error{CodeWrongType, "Operation against a key holding the wrong kind of value"}
	ErrOOM        = &Error{CodeOOM, "command not allowed when used memory > 'maxmemory'."}
	ErrNotInteger = &Error{CodeNotInteger, "value is not an integer or out of range"}
	ErrOverflow   = &Error{CodeOverflow, "increment or decrement would overflow"}
	ErrNoPolicy   = &Error{CodeNoPolicy, "no such policy"}
	ErrAllMember  = &Error{CodeAllMember, "RL.ALL takes 1 to 16 limits on distinct keys, without PARTIAL"}
	ErrUnknownOp  = &Error{CodeUnknownOp, "unknown engine operation"}
	// ErrParam is the identity of the errors Param.Check and Command.Check
	// return, whose messages name the parameter.
	ErrParam = &Error{CodeParam, "parameter out of range"}
	// ErrZeroRate is redis-cell's answer to a CL.THROTTLE rate of zero
	// (count or period 0, or more than one request a nanosecond).
	ErrZeroRate = &Error{CodeZeroRate, "Zero rates are not supported"}
)

// paramError is an ErrParam with its message formatted as fmt.Sprintf does.
func paramError(format string, args ...any) error {
	return &Error{CodeParam, fmt.Sprintf(format, args...)}
}
