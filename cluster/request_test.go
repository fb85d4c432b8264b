package cluster

import (
	"errors"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a peer that reads what it is sent and never answers, as a frozen one
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	f := newForwarder(newBusDialer(tcpDial, [8]byte{}, nil))
	defer f.close()
	old, successor := &Member{ID: "n1", Bus: ln.Addr().String()}, &Member{ID: "n2"}
	r, _ := newRequest([]engine.Command{{Op: engine.OpDBSize}})
	r.Deadline = time.Now().Add(10 * time.Second)
	r.begin(0, nil, time.Second)
	type outcome struct {
		err  error
		took time.Duration
	}
	out := make(chan outcome, 1)
	start := time.Now()
	go func() {
		_, err := f.forward(old, 0, r)
		out <- outcome{err, time.Since(start)}
	}()
	// Once the frame is on its way, the leadership moves.
	poll.Until(t, 5*time.Second, "the forwarded request", func() (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.calls) == 1, nil
	})
	moved := time.Now()
	f.leaderMoved(0, old, successor)
	o := <-out
	if !errors.Is(o.err, ErrMayHaveBeenCounted) || !strings.Contains(o.err.Error(), "moved to n2") {
		t.Errorf("gave up with %v, want ErrMayHaveBeenCounted saying the leadership moved to n2", o.err)
	}
	if waited := time.Since(moved); waited < movedGrace || waited > movedGrace+time.Second {
		t.Errorf("given up %v after the move, want about %v", waited, movedGrace)
	}
	// A move that does not concern it (another shard, or to the node it was
	// sent to) leaves a request alone.
	r2, _ := newRequest([]engine.Command{{Op: engine.OpDBSize}})
	r2.Deadline = time.Now().Add(movedGrace * 4)
	r2.begin(0, nil, time.Second)
	go func() {
		_, err := f.forward(old, 0, r2)
		out <- outcome{err, 0}
	}()
	f.leaderMoved(1, old, successor)
	f.leaderMoved(0, nil, old)
	o = <-out
	if !errors.Is(o.err, ErrMayHaveBeenCounted) || !strings.Contains(o.err.Error(), "request timeout") {
		t.Errorf("ended with %v, want the request timeout", o.err)
	}
}
