// Package fedload drives decisions into the regions of a federation and
// keeps every grant, for the federation's end-to-end tests (tests/) and
// its benchmark (bench/federation): what was sent when, what came back
// allowed, and the checks both run over the whole history.
package fedload

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Grant is one decision a client saw allowed: in which region, on which
// key, when its request was sent and its reply came back, and the reply's
// reset_after_ms.
type Grant struct {
	Region     int
	Key        string
	Send, Recv time.Time
	Reset      int64
}

// ask is a pipeline of n decisions on key, sent at send.
type ask struct {
	key  string
	send time.Time
	n    int
}

// Recorder keeps the grants and the requests of a load. It is safe for
// concurrent use.
type Recorder struct {
	// OnError, if set, hears of each request that failed, with the
	// region it was sent in; called with the recorder's lock held.
	OnError func(region int, err error)

	mu     sync.Mutex
	grants []Grant
	asked  []ask
}

// Send sends n decisions cmd on key to c as one pipeline and records what
// came back.
func (r *Recorder) Send(c *redis.Client, region int, key string, cmd []any, n int) {
	if n == 0 {
		return
	}
	ctx := context.Background()
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, n)
	for j := range cmds {
		cmds[j] = pipe.Do(ctx, cmd...)
	}
	send := time.Now()
	pipe.Exec(ctx)
	recv := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, ask{key: key, send: send, n: n})
	for _, c := range cmds {
		v, err := c.Slice()
		switch {
		case err != nil:
			if r.OnError != nil {
				r.OnError(region, err)
			}
		case len(v) >= 5 && v[0] == int64(1):
			r.grants = append(r.grants, Grant{Region: region, Key: key, Send: send, Recv: recv, Reset: v[4].(int64)})
		}
	}
}

// Add records a grant made elsewhere (a probe's).
func (r *Recorder) Add(g Grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants = append(r.grants, g)
}

// Of are key's grants in the order their replies came.
func (r *Recorder) Of(key string) []Grant {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Grant
	for _, g := range r.grants {
		if g.Key == key {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b Grant) int { return a.Recv.Compare(b.Recv) })
	return out
}

// AskedIn is how many decisions on key were sent in [from, to).
func (r *Recorder) AskedIn(key string, from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.asked {
		if a.key == key && !a.send.Before(from) && a.send.Before(to) {
			n += a.n
		}
	}
	return n
}

// WindowOf is the aligned window of w ms a strict sliding key's grant was
// counted in: the reply's reset_after_ms is the time to the end of that
// window plus one window (for a relaxed one too: a grant leaves a count
// in the current window), and the decision was taken between the
// request's send and its reply. ok is false when that does not name one
// window.
func WindowOf(g Grant, w int64) (start int64, ok bool) {
	lo, hi := g.Send.UnixMilli()+g.Reset-w, g.Recv.UnixMilli()+g.Reset-w
	end := (lo + w - 1) / w * w
	return end - w, end <= hi
}

// MostWithin is the most grants within any span of d; gs in reply order.
func MostWithin(gs []Grant, d time.Duration) int {
	most, j := 0, 0
	for i, g := range gs {
		for g.Recv.Sub(gs[j].Recv) >= d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// AdmittedIn is how many grants came back in [from, to).
func AdmittedIn(gs []Grant, from, to time.Time) int {
	n := 0
	for _, g := range gs {
		if !g.Recv.Before(from) && g.Recv.Before(to) {
			n++
		}
	}
	return n
}
