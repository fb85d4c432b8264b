package client

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// problemQuotaExceeded is the problem type draft-ietf-httpapi-ratelimit-
// headers-11 (section 5.1) defines for requests over a quota policy.
const problemQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Problem is an RFC 9457 problem details object, the body of the responses
// the middleware writes itself (429, 503, the default 401).
type Problem struct {
	// Type is a URI naming the kind of problem; empty means "about:blank",
	// a problem described by its status code alone.
	Type string `json:"type,omitempty"`
	// Title is a short summary of the problem type.
	Title string `json:"title"`
	// Status repeats the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence.
	Detail string `json:"detail,omitempty"`
	// ViolatedPolicies names the quota policies exceeded, the draft's
	// extension member of the quota-exceeded type.
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// WriteProblem writes p as an application/problem+json response with status
// p.Status. Headers set on w before the call are kept.
func WriteProblem(w http.ResponseWriter, p Problem) {
	body, err := json.Marshal(p)
	if err != nil { // only strings and ints: cannot happen
		body = []byte(`{"title":"Internal Server Error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
