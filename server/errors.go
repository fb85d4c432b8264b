package server

import "github.com/rlserver/rlserver/engine"

// Error replies. The errors of commands are Redis's texts already: the
// command table is the protocol's vocabulary. The engine's are typed: a code
// and a message, which crosses the bus between nodes as such, and this is
// where the code becomes the reply's first word.

// appendError appends the error reply to err: its first word (ERR,
// WRONGTYPE ...), then its text. Line breaks in the text are replaced so the
// reply stays one line.
func appendError(b []byte, err error) []byte {
	b = append(b, '-')
	if e := engineError(err); e != nil {
		b = append(append(b, engineWord(e.Code)...), ' ')
	}
	for _, c := range []byte(err.Error()) {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// engineError is the engine error err is or wraps, nil if none. It is
// errors.As without the allocation of As's target, which every error reply
// would pay.
func engineError(err error) *engine.Error {
	for err != nil {
		if e, ok := err.(*engine.Error); ok {
			return e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return nil
		}
		err = u.Unwrap()
	}
	return nil
}

// engineWord is the first word of the reply to an engine error of code:
// Redis's where Redis has the error, redis-cell's for CL.THROTTLE's own.
func engineWord(code engine.Code) string {
	switch code {
	case engine.CodeWrongType:
		return "WRONGTYPE"
	case engine.CodeOOM:
		return "OOM"
	case engine.CodeZeroRate:
		// redis-cell replies "Cell error: Zero rates are not supported",
		// without Redis's ERR: code that matches its reply keeps working.
		return "Cell error:"
	}
	return "ERR"
}
