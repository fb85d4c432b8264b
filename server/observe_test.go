package server

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingObserver adds up what it is told, by class.
type countingObserver struct {
	mu    sync.Mutex
	calls [2]int
	n     [2]int64
	max   time.Duration
}

func (o *countingObserver) Answered(class CommandClass, n int64, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[class]++
	o.n[class] += n
	o.max = max(o.max, d)
}

// A pipeline is reported once per class, with how many of its commands
// went to the shards and how many the server answered itself.
func TestObserverCountsAPipelineByClass(t *testing.T) {
	obs := &countingObserver{}
	s := startServer(t, withConfig(func(c *Config) { c.Observer = obs }))
	in := []byte(encode("RL.SLIDING", "a", "10", "1000") + encode("PING") + encode("RL.SLIDING", "b", "10", "1000") +
		encode("DEL", "a", "b") + encode("NOSUCHCOMMAND"))
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(s.Server, wrappedConn{Conn: a})
	if _, _, ok := c.answer(in, nil); !ok {
		t.Fatal("answer closed the connection")
	}
	if obs.calls != [2]int{1, 1} || obs.n != [2]int64{3, 2} {
		t.Errorf("calls %v (keyed, server), commands %v; want [1 1] and [3 2]", obs.calls, obs.n)
	}
	if obs.max <= 0 || obs.max > time.Minute {
		t.Errorf("duration %v", obs.max)
	}
	if ClassKeyed.String() != "keyed" || ClassServer.String() != "server" {
		t.Errorf("class names %q %q", ClassKeyed, ClassServer)
	}
}

// nopObserver is the cheapest observer: what is left to measure is the
// server's own cost of timing a pipeline.
type nopObserver struct{}

func (nopObserver) Answered(CommandClass, int64, time.Duration) {}

// Timing pipelines for an observer allocates nothing either.
func TestPipelineAllocationsWithObserver(t *testing.T) {
	s := startServer(t, withShards(4), withConfig(func(c *Config) { c.Observer = nopObserver{} }))
	var raw strings.Builder
	for i := range 32 {
		raw.WriteString(encode("RL.SLIDING", "user:"+string(rune('a'+i%16)), "1000000", "60000"))
	}
	raw.WriteString(encode("PING"))
	in := []byte(raw.String())
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(s.Server, wrappedConn{Conn: a})
	var out []byte
	run := func() {
		rest, reply, ok := c.answer(in, out[:0])
		if !ok || len(rest) != 0 {
			t.Fatalf("answer: ok %v, %d bytes left", ok, len(rest))
		}
		out = reply
	}
	for range 10 {
		run()
	}
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Errorf("%v allocations per pipeline with an observer, want 0", allocs)
	}
}
