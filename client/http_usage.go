package client

import (
	"context"
	"net/http"
	"sync/atomic"
)

// A route whose cost is known only once its response is done (tokens a
// model generated, bytes streamed) sets HTTPConfig.Usage: the request is
// decided up front as usual (Cost, default 1), and once the handler has
// returned, which for a streamed response is when its stream ends, what
// Usage reads is charged to the same key with FORCE (Client.Charge): it
// counts even when it takes the caller past its limit, and the requests
// that follow are refused until that debt is paid off.

// Response is what a handler's response was, for HTTPConfig.Usage: its
// status, its header (trailers included, as the handler set them), the
// body bytes written, and the usage the handler reported with AddUsage.
type Response struct {
	Status   int
	Header   http.Header
	Written  int64
	Reported int64
}

// AddUsage reports n more units of usage of the request whose context is
// ctx, to be charged when its handler returns (HTTPConfig.Usage reads the
// sum in Response.Reported). It may be called as the usage is known, from
// any goroutine, while the handler runs; outside a limited route it does
// nothing.
func AddUsage(ctx context.Context, n int64) {
	if m, ok := ctx.Value(usageKey{}).(*atomic.Int64); ok {
		m.Add(n)
	}
}

// usageKey is the context key of a request's reported usage.
type usageKey struct{}

// UsageReported is a Usage that charges what the handler reported with
// AddUsage.
func UsageReported(_ *http.Request, res *Response) int64 { return res.Reported }

// serveAndCharge serves an allowed request, then charges the usage its
// response reports under partition's key.
func (l *HTTPLimiter) serveAndCharge(w http.ResponseWriter, r *http.Request, next http.Handler, key string) {
	meter := new(atomic.Int64)
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), usageKey{}, meter)))
	n := l.cfg.Usage(r, &Response{Status: rec.status, Header: w.Header(), Written: rec.written, Reported: meter.Load()})
	if n <= 0 {
		return
	}
	ticket, _, err := l.breaker.allow()
	if err != nil {
		l.cfg.Logger.Warn("rlserver unavailable: a response's usage was not charged", "policy", l.cfg.Policy, "units", n)
		return
	}
	// The request's context may be done (the client went away with the
	// stream): the usage counts all the same.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), l.cfg.Timeout)
	defer cancel()
	_, err = l.cfg.Client.Charge(ctx, key, l.cfg.Rule, n)
	switch {
	case err == nil:
		l.breaker.done(ticket, answered)
	case isOutage(err):
		l.breaker.done(ticket, outage)
		l.cfg.Logger.Warn("rlserver unavailable: a response's usage was not charged", "policy", l.cfg.Policy, "units", n, "err", err)
	default:
		l.breaker.done(ticket, answered)
		l.cfg.Logger.Error("rlserver refused a response's usage", "policy", l.cfg.Policy, "units", n, "err", err)
	}
}

// recorder records what a handler writes, passing it all on. It unwraps
// (http.ResponseController) and flushes, so that streaming handlers work
// through it as without it.
type recorder struct {
	http.ResponseWriter
	status      int
	written     int64
	wroteHeader bool
}

func (w *recorder) WriteHeader(code int) {
	if !w.wroteHeader && code >= 200 {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	w.wroteHeader = true
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	return n, err
}

// Flush sends what was written so far (http.Flusher), as a stream does.
func (w *recorder) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap is the ResponseWriter underneath, for http.ResponseController.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
