//go:build linux

package server

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// heldLoop is an event loop of its own, with nothing in it yet.
func heldLoop(t *testing.T) *eventLoop {
	t.Helper()
	l, err := newEventLoop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(l.ep); unix.Close(l.wake) })
	return l
}

// heldResult is what a waitHolding run on another goroutine returned.
type heldResult struct {
	n   int
	err error
}

// startHolding runs waitHolding on a goroutine of its own with window,
// closing waiting just before it waits.
func startHolding(l *eventLoop, window time.Duration) (waiting chan struct{}, done chan heldResult) {
	waiting, done = make(chan struct{}), make(chan heldResult, 1)
	go func() {
		events := make([]unix.EpollEvent, 8)
		close(waiting)
		n, err := l.waitHolding(events, window)
		done <- heldResult{n, err}
	}()
	return waiting, done
}

// await is the result of a waitHolding run, which must come within limit.
func await(t *testing.T, done chan heldResult, limit time.Duration) heldResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("the held wait did not end within %v", limit)
		return heldResult{}
	}
}

// wakeHeld posts a request to l, whose wake descriptor then has bytes, and
// checks that the held wait returns that one event.
func wakeHeld(t *testing.T, l *eventLoop, done chan heldResult) {
	t.Helper()
	l.post(nil, requestClose)
	if r := await(t, done, 10*time.Second); r.n != 1 || r.err != nil {
		t.Fatalf("got %d events, %v; want the wake's one", r.n, r.err)
	}
}

func TestHeldWaitReturnsWhatArrives(t *testing.T) {
	l := heldLoop(t)
	waiting, done := startHolding(l, time.Minute)
	<-waiting
	wakeHeld(t, l, done)
}

// A window with nothing in it ends the held wait with no event and no
// error, and not before the window.
func TestHeldWaitEndsWithItsWindow(t *testing.T) {
	l := heldLoop(t)
	const window = 30 * time.Millisecond
	start := time.Now()
	_, done := startHolding(l, window)
	r := await(t, done, 10*time.Second)
	if r.n != 0 || r.err != nil {
		t.Fatalf("got %d events, %v; want none", r.n, r.err)
	}
	if took := time.Since(start); took < window {
		t.Fatalf("it ended after %v, before its window of %v", took, window)
	}
}

// besideHeldWait runs fn while another goroutine waits holding its
// processor, with a window of two minutes: fn must end long before it
// (within 30 s), and the wait must still return what arrives afterwards.
func besideHeldWait(t *testing.T, what string, fn func()) {
	t.Helper()
	l := heldLoop(t)
	waiting, done := startHolding(l, 2*time.Minute)
	<-waiting
	start := time.Now()
	fn()
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("%s took %v beside a held wait", what, took)
	}
	wakeHeld(t, l, done)
}

// A collection stops the world, which a goroutine in a system call the
// scheduler is not told of would hold up for as long as it waits: the
// runtime's signal must end the wait instead.
func TestHeldWaitLetsTheWorldStop(t *testing.T) {
	besideHeldWait(t, "five collections", func() {
		for range 5 {
			runtime.GC()
		}
	})
}

// With one processor, held by the wait, every other goroutine waits for it:
// the runtime's monitor must take it back (its signal after 10 ms), so that
// a timer and a goroutine it wakes still run long before the window ends.
func TestHeldWaitDoesNotStarveTheOnlyProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	besideHeldWait(t, "a 1 ms sleep and a goroutine", func() {
		time.Sleep(time.Millisecond)
		woken := make(chan struct{})
		go close(woken)
		<-woken
	})
}

// A loop holds its processor only while another is left for the
// goroutines that answer it, and asks again as GOMAXPROCS changes.
func TestHeldWaitNeedsAProcessorToSpare(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := heldLoop(t)
	l.all = &eventLoops{loops: []*eventLoop{l}}
	if l.mayHold() {
		t.Fatal("one loop on one processor holds it")
	}
	runtime.GOMAXPROCS(2)
	for range holdCheckEvery - 1 {
		l.mayHold() // the count runs to the next check
	}
	if !l.mayHold() {
		t.Fatal("one loop on two processors does not hold one")
	}
	l.all.loops = append(l.all.loops, heldLoop(t))
	for range holdCheckEvery - 1 {
		l.mayHold()
	}
	if l.mayHold() {
		t.Fatal("two loops on two processors hold them")
	}
}
