package cluster

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// A request its waiter gave up on is the waiter's: whatever the cluster
// still does with it, it neither writes its results nor signals it. Expire
// says how far it got.
func TestExpiredRequestsAreNeverAnswered(t *testing.T) {
	for _, c := range []struct {
		name    string
		advance func(r *Request)
		want    error
	}{
		{"pending", func(r *Request) {}, ErrNotApplied},
		{"sent", func(r *Request) { r.take(); r.markSent("n2") }, ErrMayHaveBeenCounted},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, done := newRequest([]engine.Command{{Op: engine.OpDBSize}})
			r.begin(3, nil, time.Second)
			c.advance(r)
			if !r.Expire() {
				t.Fatal("Expire refused a request nobody was answering")
			}
			if !errors.Is(r.Err, c.want) || !strings.Contains(r.Err.Error(), "shard 3") {
				t.Errorf("expired with %v, want %v naming shard 3", r.Err, c.want)
			}
			// The cluster answers it late: nothing happens.
			deliver([]*Request{r}, []engine.Result{{Type: engine.ResInt, Int: 7}}, nil)
			fail(r, ErrMayHaveBeenCounted)
			select {
			case <-done:
				t.Fatal("an expired request was signalled")
			default:
			}
			if r.Results[0].Type != engine.ResNone || !errors.Is(r.Err, c.want) {
				t.Errorf("an expired request was written: %+v, %v", r.Results[0], r.Err)
			}
		})
	}
}

// Expire waits while the cluster holds a request busy, and then leaves it
// to be answered.
func TestExpireWaitsForAnAnswerUnderWay(t *testing.T) {
	r, done := newRequest([]engine.Command{{Op: engine.OpDBSize}})
	r.begin(0, nil, time.Second)
	if !r.take() {
		t.Fatal("take")
	}
	go func() {
		time.Sleep(20 * time.Millisecond) // the cluster applies it, for a while
		r.Results[0] = engine.Result{Type: engine.ResInt, Int: 7}
		r.answer(nil)
	}()
	if r.Expire() {
		t.Fatal("Expire took a request being answered")
	}
	<-done
	if r.Err != nil || r.Results[0].Int != 7 {
		t.Fatalf("answer %+v, %v", r.Results[0], r.Err)
	}
}

// A request forwarded to a node that stops answering once the shard's
// leadership has moved elsewhere is given up within movedGrace, as "may
// have been counted", naming the new leader: it does not wait for a frozen
// or cut-off node.
func TestForwardToAReplacedLeaderIsGivenUp(t *testing.T) {
	// A peer that reads what it is sent and never answers, as a frozen one.
	old, _ := rawMuxPeer(t, func(conn net.Conn, rd *bufio.Reader) { io.Copy(io.Discard, rd) })
	successor := &Member{ID: "n2"}
	f, _ := testForwarder(t, nil)
	r, done := forwardedRequest("k", 10*time.Second)
	start := time.Now()
	f.forward(old, 0, r)
	// Once the frame is on its way, the leadership moves.
	poll.Until(t, 5*time.Second, "the forwarded request", func() (bool, error) {
		return inFlight(f) == 1, nil
	})
	moved := time.Now()
	f.leaderMoved(0, old, successor)
	wait(t, done)
	if !errors.Is(r.Err, ErrMayHaveBeenCounted) || !strings.Contains(r.Err.Error(), "moved to n2") {
		t.Errorf("gave up with %v, want ErrMayHaveBeenCounted saying the leadership moved to n2", r.Err)
	}
	if waited := time.Since(moved); waited < movedGrace || waited > movedGrace+time.Second {
		t.Errorf("given up %v after the move (%v after it was sent), want about %v", waited, time.Since(start), movedGrace)
	}
	// A move that does not concern it (another shard, or to the node it was
	// sent to) leaves a request alone.
	r2, done2 := forwardedRequest("k", movedGrace*4)
	f.forward(old, 0, r2)
	poll.Until(t, 5*time.Second, "the second forwarded request", func() (bool, error) {
		return inFlight(f) == 1, nil
	})
	f.leaderMoved(1, old, successor)
	f.leaderMoved(0, nil, old)
	wait(t, done2)
	if !errors.Is(r2.Err, ErrMayHaveBeenCounted) || !strings.Contains(r2.Err.Error(), "request timeout") {
		t.Errorf("ended with %v, want the request timeout", r2.Err)
	}
}

// inFlight counts the requests f has sent and awaits answers to.
func inFlight(f *forwarder) int {
	n := 0
	f.mu.Lock()
	var muxes []*muxConn
	for _, m := range f.muxes {
		muxes = append(muxes, m)
	}
	f.mu.Unlock()
	for _, m := range muxes {
		m.mu.Lock()
		n += len(m.calls)
		m.mu.Unlock()
	}
	return n
}
