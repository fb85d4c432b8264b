package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// testHandler is a forwarding server's node for tests: submit receives
// every request forwarded to it.
type testHandler struct {
	submit  func(shard int, r *Request)
	timeout time.Duration
	leader  string // the node it names as the shard's leader, if any
}

func (h *testHandler) submitLocal(shard int, r *Request) { h.submit(shard, r) }
func (h *testHandler) requestTimeout() time.Duration     { return h.timeout }
func (h *testHandler) leaderHint(int) string             { return h.leader }

// answerWith answers r, submitted to a shard, with v.
func answerWith(r *Request, v int64) {
	if r.take() {
		r.Results[0] = engine.Result{Type: engine.ResInt, Int: v}
		r.answer(nil)
	}
}

// startForwardPeer serves forwarding on a bus of its own with h.
func startForwardPeer(t *testing.T, h forwardHandler) *Member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := newBus(ln, ln.Addr().String(), newBusDialer(tcpDial, ClusterID{}, nil), nil, slog.New(slog.DiscardHandler),
		map[byte]func(net.Conn){streamForwardMux: func(c net.Conn) { serveMux(c, h) }})
	go b.accept()
	t.Cleanup(func() { b.close() })
	return &Member{ID: "n2", Bus: ln.Addr().String()}
}

// testForwarder is a forwarder whose requests end as they would with no
// router to take them back; dials counts its connections.
func testForwarder(t *testing.T, dial Dialer) (f *forwarder, dials *atomic.Int64) {
	dials = new(atomic.Int64)
	if dial == nil {
		dial = tcpDial
	}
	counted := func(addr string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return dial(addr, timeout)
	}
	f = newForwarder(newBusDialer(counted, ClusterID{}, nil), func(r *Request, _ *Member, _ string, err error) { fail(r, err) })
	t.Cleanup(f.close)
	return f, dials
}

// forwardedRequest is a request for key, begun, to be answered within d.
func forwardedRequest(key string, d time.Duration) (*Request, <-chan struct{}) {
	r, done := newRequest([]engine.Command{sliding(key, 10, 60_000)})
	r.begin(0, nil, d)
	return r, done
}

// wait waits for r's signal, for at most 10 s.
func wait(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a forwarded request was never answered")
	}
}

// Requests forwarded at once to a peer share one connection: the peer
// submits each as it arrives, without waiting for the answers before it
// (here it answers none until all have arrived), and the answers, which
// come back in any order, each reach their own request.
func TestForwardingManyRequestsAnsweredOutOfOrder(t *testing.T) {
	const n = 64
	var mu sync.Mutex
	var arrived []*Request
	h := &testHandler{timeout: 10 * time.Second, submit: func(_ int, r *Request) {
		mu.Lock()
		defer mu.Unlock()
		arrived = append(arrived, r)
		if len(arrived) < n {
			return
		}
		for i := len(arrived) - 1; i >= 0; i-- { // last first
			var v int64
			fmt.Sscan(string(arrived[i].Cmds[0].Key), &v)
			answerWith(arrived[i], v*10)
		}
	}}
	peer := startForwardPeer(t, h)
	f, dials := testForwarder(t, nil)
	reqs := make([]*Request, n)
	dones := make([]<-chan struct{}, n)
	for i := range n {
		reqs[i], dones[i] = forwardedRequest(fmt.Sprint(i), 10*time.Second)
		f.forward(peer, 0, reqs[i])
	}
	for i := range n {
		wait(t, dones[i])
		if reqs[i].Err != nil || reqs[i].Results[0].Int != int64(i*10) {
			t.Fatalf("request %d: %+v, %v; want %d", i, reqs[i].Results[0], reqs[i].Err, i*10)
		}
	}
	if dials.Load() != 1 {
		t.Errorf("%d connections to the peer, want 1", dials.Load())
	}
}

// A request its waiter gives up on while it waits to be written is never
// sent; the next one is.
func TestForwardGivenUpBeforeItIsSentIsNeverSent(t *testing.T) {
	var keys []string
	var mu sync.Mutex
	h := &testHandler{timeout: 10 * time.Second, submit: func(_ int, r *Request) {
		mu.Lock()
		keys = append(keys, string(r.Cmds[0].Key))
		mu.Unlock()
		answerWith(r, 1)
	}}
	peer := startForwardPeer(t, h)
	open := make(chan struct{})
	f, _ := testForwarder(t, func(addr string, timeout time.Duration) (net.Conn, error) {
		<-open // the connection takes a while
		return tcpDial(addr, timeout)
	})
	first, firstDone := forwardedRequest("given-up", 10*time.Second)
	f.forward(peer, 0, first)
	if !first.Expire() || !errors.Is(first.Err, ErrNotApplied) {
		t.Fatalf("giving up a request not yet sent: %v, want ErrNotApplied", first.Err)
	}
	second, secondDone := forwardedRequest("sent", 10*time.Second)
	f.forward(peer, 0, second)
	close(open)
	wait(t, secondDone)
	if second.Err != nil {
		t.Fatal(second.Err)
	}
	select {
	case <-firstDone:
		t.Fatal("the request given up was signalled")
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 1 || keys[0] != "sent" {
		t.Fatalf("the peer received %q, want only the request not given up", keys)
	}
}

// rawMuxPeer accepts multiplexed forwarding connections and hands each,
// accepted, to serve. It reads any other stream's frames and never answers,
// as a frozen peer.
func rawMuxPeer(t *testing.T, serve func(conn net.Conn, rd *bufio.Reader)) (*Member, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				rd := bufio.NewReader(conn)
				var h [headerSize]byte
				if _, err := io.ReadFull(rd, h[:]); err != nil {
					return
				}
				if h[2] != streamForwardMux {
					io.Copy(io.Discard, rd)
					return
				}
				conn.Write([]byte{muxVersion})
				serve(conn, rd)
			}()
		}
	}()
	return &Member{ID: "n1", Bus: ln.Addr().String()}, ln
}

// A connection that breaks fails the requests written on it as "may have
// been counted"; a peer that cannot be reached fails them as not applied.
func TestForwardingConnectionCut(t *testing.T) {
	peer, ln := rawMuxPeer(t, func(conn net.Conn, rd *bufio.Reader) {
		for range 2 { // two requests arrive, and the connection breaks
			if _, err := readMuxFrame(rd, nil); err != nil {
				return
			}
		}
	})
	f, _ := testForwarder(t, nil)
	var dones []<-chan struct{}
	var reqs []*Request
	for i := range 2 {
		r, done := forwardedRequest(fmt.Sprint(i), 10*time.Second)
		reqs, dones = append(reqs, r), append(dones, done)
		f.forward(peer, 0, r)
	}
	for i, r := range reqs {
		wait(t, dones[i])
		if !errors.Is(r.Err, ErrMayHaveBeenCounted) || !strings.Contains(r.Err.Error(), "broke") {
			t.Errorf("request %d on a broken connection: %v, want ErrMayHaveBeenCounted", i, r.Err)
		}
	}
	ln.Close()
	r, done := forwardedRequest("x", 10*time.Second)
	f.forward(peer, 0, r)
	wait(t, done)
	if !errors.Is(r.Err, ErrNotApplied) || !strings.Contains(r.Err.Error(), "unreachable") {
		t.Errorf("request to a peer that is gone: %v, want ErrNotApplied", r.Err)
	}
}

// A request the peer does not apply within its own request timeout is
// answered as "may have been counted"; one it never answers is given up at
// the request's deadline, the connection staying up for the others.
func TestForwardingDeadlines(t *testing.T) {
	h := &testHandler{timeout: 50 * time.Millisecond, submit: func(_ int, r *Request) {
		if string(r.Cmds[0].Key) == "fast" {
			answerWith(r, 1)
		}
	}}
	peer := startForwardPeer(t, h)
	f, dials := testForwarder(t, nil)
	r, done := forwardedRequest("slow", 10*time.Second)
	f.forward(peer, 0, r)
	wait(t, done)
	if !errors.Is(r.Err, ErrMayHaveBeenCounted) {
		t.Errorf("a request the peer did not apply in time: %v, want ErrMayHaveBeenCounted", r.Err)
	}

	silent, _ := rawMuxPeer(t, func(conn net.Conn, rd *bufio.Reader) { io.Copy(io.Discard, rd) })
	r, done = forwardedRequest("x", 100*time.Millisecond)
	f.forward(silent, 0, r)
	wait(t, done)
	if !errors.Is(r.Err, ErrMayHaveBeenCounted) || !strings.Contains(r.Err.Error(), "request timeout") {
		t.Errorf("a request never answered: %v, want ErrMayHaveBeenCounted at the timeout", r.Err)
	}

	r, done = forwardedRequest("fast", 10*time.Second)
	f.forward(peer, 0, r)
	wait(t, done)
	if r.Err != nil || dials.Load() != 2 {
		t.Errorf("after the timeouts: %v, %d connections, want an answer on the first connection", r.Err, dials.Load())
	}
}

// A request forwarded over a multiplexed connection allocates nothing, on
// either side, once the connection is warm: its call, frame and answer
// reuse the memory of those before.
func TestForwardingAllocatesNothingPerRequest(t *testing.T) {
	h := &testHandler{timeout: 10 * time.Second, submit: func(_ int, r *Request) { answerWith(r, 1) }}
	peer := startForwardPeer(t, h)
	f, _ := testForwarder(t, nil)
	r, done := forwardedRequest("k", 10*time.Second)
	deadline := time.Now().Add(time.Minute)
	roundTrip := func() {
		r.Deadline = deadline
		r.begin(0, nil, 0)
		f.forward(peer, 0, r)
		<-done
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	for range 100 {
		roundTrip()
	}
	if allocs := testing.AllocsPerRun(500, roundTrip); allocs > 0.1 {
		t.Fatalf("%v allocations per forwarded request, want none", allocs)
	}
}

// A peer that no longer leads the shard hands the request back unapplied,
// naming the node that does: the forwarder passes the name on, for the
// request to be routed there.
func TestForwardToANodeThatNoLongerLeadsNamesTheLeader(t *testing.T) {
	h := &testHandler{timeout: 10 * time.Second, leader: "n3", submit: func(shard int, r *Request) {
		fail(r, retryError(shard, "", ErrNotApplied, "this node does not lead it"))
	}}
	peer := startForwardPeer(t, h)
	type ending struct {
		hint string
		err  error
	}
	ended := make(chan ending, 1)
	f := newForwarder(newBusDialer(tcpDial, ClusterID{}, nil), func(_ *Request, _ *Member, hint string, err error) {
		ended <- ending{hint, err}
	})
	t.Cleanup(f.close)
	r, _ := forwardedRequest("k", 10*time.Second)
	f.forward(peer, 0, r)
	select {
	case e := <-ended:
		if e.hint != "n3" || !errors.Is(e.err, ErrNotApplied) {
			t.Fatalf("ended with %q, %v; want n3 named and ErrNotApplied", e.hint, e.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
}

// A forwarded request that its leader ends with a sentinel ends so on the
// node that forwarded it, with the leader's reason: the client connected
// there learns why, not only that it may retry.
func TestForwardedRequestEndsWithItsLeadersReason(t *testing.T) {
	why := retryError(0, "n2", ErrMayHaveBeenCounted,
		"the leader lost its leadership, or could not write its log, while this request was being committed")
	h := &testHandler{timeout: 10 * time.Second, submit: func(_ int, r *Request) { fail(r, why) }}
	peer := startForwardPeer(t, h)
	f, _ := testForwarder(t, nil)
	r, done := forwardedRequest("k", 10*time.Second)
	f.forward(peer, 0, r)
	wait(t, done)
	if !errors.Is(r.Err, ErrMayHaveBeenCounted) || r.Err.Error() != "forwarded to n2: "+why.Error() {
		t.Fatalf("the forwarded request ended with %v; want the leader's %v", r.Err, why)
	}
}
