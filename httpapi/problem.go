package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// Every error is answered with an RFC 9457 problem: application/problem+json
// with the status, its title, and a detail that says what is wrong, in the
// words a RESP client would read (without their first word, ERR, which the
// status carries).

// Problem is an error's body.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Counted, on a 503, says whether the request may have been counted
	// ("maybe": a retry may count it twice) or was not ("no").
	Counted string `json:"counted,omitempty"`
}

// statusError is an error with the status that answers it.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// withStatus gives err the status that answers it.
func withStatus(status int, err error) error { return &statusError{status, err} }

// tooLargeError is a body over the bound.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the body is longer than the %d bytes allowed (--max-request-len)", e.max)
}

// statusOf is the status that answers err, and whether a retry after a
// while may succeed (Retry-After).
func statusOf(err error) (int, bool) {
	var se *statusError
	var tooBig *tooLargeError
	var ee *engine.Error
	switch {
	case errors.As(err, &se):
		return se.status, false
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, false
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest, false
	case errors.Is(err, cluster.ErrNotApplied), errors.Is(err, cluster.ErrMayHaveBeenCounted), errors.Is(err, cluster.ErrShuttingDown):
		return http.StatusServiceUnavailable, true
	case errors.As(err, &ee):
		return engineStatus(ee.Code), ee.Code == engine.CodeOOM
	}
	return http.StatusInternalServerError, false
}

// engineStatus is the status of an engine error of code.
func engineStatus(code engine.Code) int {
	switch code {
	case engine.CodeWrongType:
		return http.StatusConflict
	case engine.CodeOOM:
		return http.StatusInsufficientStorage
	case engine.CodeNoReservation:
		return http.StatusNotFound
	case engine.CodeExpired:
		return http.StatusGone
	}
	return http.StatusBadRequest // a parameter, a policy, a limit the engine cannot count
}

// writeProblem answers err.
func writeProblem(w http.ResponseWriter, err error) int {
	status, retry := statusOf(err)
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail(err)}
	switch {
	case errors.Is(err, cluster.ErrMayHaveBeenCounted):
		p.Counted = "maybe"
	case status == http.StatusServiceUnavailable:
		p.Counted = "no"
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if retry {
		h.Set("Retry-After", "1")
	}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="rlserver", charset="UTF-8", Bearer realm="rlserver"`)
	}
	w.WriteHeader(status)
	b, _ := json.Marshal(p)
	_, _ = w.Write(append(b, '\n'))
	return status
}

// detail is the text of err a client reads: a RESP error's without its
// first word when that is ERR (the status says as much).
func detail(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		err = se.err
	}
	text := err.Error()
	if errors.Is(err, errBadRequest) {
		text = strings.TrimPrefix(text, errBadRequest.Error()+": ")
	}
	return strings.TrimPrefix(text, "ERR ")
}
