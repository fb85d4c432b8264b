package cluster

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// gatedLog is a log store whose appends wait for the test to let them
// through (or fail them), and which counts them.
type gatedLog struct {
	*raft.InmemStore
	gate  chan error // each append takes one: nil lets it through
	mu    sync.Mutex
	calls [][2]uint64 // first and last index of each append, in order
}

func newGatedLog() *gatedLog {
	return &gatedLog{InmemStore: raft.NewInmemStore(), gate: make(chan error)}
}

func (g *gatedLog) StoreLogs(logs []*raft.Log) error {
	if err := <-g.gate; err != nil {
		return err
	}
	g.mu.Lock()
	g.calls = append(g.calls, [2]uint64{logs[0].Index, logs[len(logs)-1].Index})
	g.mu.Unlock()
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedLog) appends() [][2]uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][2]uint64(nil), g.calls...)
}

func entries(first, last uint64) []*raft.Log {
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "e%d", i)})
	}
	return logs
}

// leading makes d defer its appends, as for a replica that leads, until
// the returned function says it no longer does.
func leading(d *deferredLog) (stepDown func()) {
	var mu sync.Mutex
	leads := true
	f := func() bool { mu.Lock(); defer mu.Unlock(); return leads }
	d.leading.Store(&f)
	return func() { mu.Lock(); leads = false; mu.Unlock() }
}

func openDeferred(t *testing.T, inner raft.LogStore) *deferredLog {
	t.Helper()
	d, err := newDeferredLog(inner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// returnsWithin runs f and fails the test unless it returns within a
// second.
func returnsWithin(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

// blocked reports whether f is still running after a while (the caller
// lets it finish).
func blocked(f func() error) (chan error, bool) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		done <- err
		return done, false
	case <-time.After(50 * time.Millisecond):
		return done, true
	}
}

func TestDeferredLogLeaderAppendReturnsBeforeTheDisk(t *testing.T) {
	inner := newGatedLog()
	d := openDeferred(t, inner)
	leading(d)
	if err := returnsWithin(t, "a leader's append", func() error { return d.StoreLogs(entries(1, 3)) }); err != nil {
		t.Fatal(err)
	}
	// Readable at once, from the queue.
	var l raft.Log
	if err := d.GetLog(2, &l); err != nil || string(l.Data) != "e2" {
		t.Fatalf("GetLog(2) = %q, %v", l.Data, err)
	}
	if last, _ := d.LastIndex(); last != 3 {
		t.Fatalf("LastIndex = %d, want 3", last)
	}
	if first, _ := d.FirstIndex(); first != 1 {
		t.Fatalf("FirstIndex = %d, want 1", first)
	}
	if got := d.durableIndex(); got != 0 {
		t.Fatalf("durable index %d before the write", got)
	}
	wait, stillWaiting := blocked(func() error { return d.waitDurable(3, nil) })
	if !stillWaiting {
		t.Fatal("waitDurable returned before the entries were written")
	}
	// More appends while the first batch is being written share the next.
	if err := d.StoreLogs(entries(4, 4)); err != nil {
		t.Fatal(err)
	}
	if err := d.StoreLogs(entries(5, 6)); err != nil {
		t.Fatal(err)
	}
	inner.gate <- nil // batch 1..3 (or 1..6, had the writer not taken it yet)
	if err := returnsWithin(t, "waitDurable(3)", func() error { return <-wait }); err != nil {
		t.Fatal(err)
	}
	if inner.appends()[0][1] < 6 {
		inner.gate <- nil
	}
	if err := returnsWithin(t, "waitDurable(6)", func() error { return d.waitDurable(6, nil) }); err != nil {
		t.Fatal(err)
	}
	if got := d.durableIndex(); got != 6 {
		t.Fatalf("durable index %d, want 6", got)
	}
	if calls := inner.appends(); len(calls) > 2 {
		t.Fatalf("appends %v: the entries queued during a write should share the next", calls)
	}
	for i := uint64(1); i <= 6; i++ {
		if err := inner.GetLog(i, &l); err != nil || string(l.Data) != fmt.Sprintf("e%d", i) {
			t.Fatalf("the log underneath, entry %d: %q, %v", i, l.Data, err)
		}
	}
}

func TestDeferredLogFollowerAppendWaitsForTheDisk(t *testing.T) {
	inner := newGatedLog()
	d := openDeferred(t, inner)
	// No Raft yet: appends are synchronous, as a follower's (rule 1).
	done, stillWaiting := blocked(func() error { return d.StoreLogs(entries(1, 2)) })
	if !stillWaiting {
		t.Fatal("a follower's append returned before its entries were written")
	}
	inner.gate <- nil
	if err := returnsWithin(t, "the follower's append", func() error { return <-done }); err != nil {
		t.Fatal(err)
	}

	// A leader that steps down: what it queued is written before what it
	// appends as a follower, and the follower's append waits for both.
	stepDown := leading(d)
	if err := d.StoreLogs(entries(3, 4)); err != nil {
		t.Fatal(err)
	}
	stepDown()
	done, stillWaiting = blocked(func() error { return d.StoreLogs(entries(5, 5)) })
	if !stillWaiting {
		t.Fatal("a follower's append returned before the entries queued before it were written")
	}
	inner.gate <- nil // 3..4
	inner.gate <- nil // 5
	if err := returnsWithin(t, "the follower's append", func() error { return <-done }); err != nil {
		t.Fatal(err)
	}
	if calls := inner.appends(); fmt.Sprint(calls) != "[[1 2] [3 4] [5 5]]" {
		t.Fatalf("appends %v", calls)
	}
}

func TestDeferredLogRefusesAGap(t *testing.T) {
	inner := newGatedLog()
	d := openDeferred(t, inner)
	leading(d)
	if err := d.StoreLogs(entries(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := d.StoreLogs(entries(4, 4)); !errors.Is(err, errLogGap) {
		t.Fatalf("an append leaving a gap: %v, want errLogGap", err)
	}
	inner.gate <- nil
}

func TestDeferredLogFailedWrites(t *testing.T) {
	full := errors.New("no space left on device")
	inner := newGatedLog()
	d := openDeferred(t, inner)

	// A follower's append that fails is taken back: Raft knows it is not
	// stored, and appends the same entries again later.
	done, _ := blocked(func() error { return d.StoreLogs(entries(1, 2)) })
	inner.gate <- full
	if err := returnsWithin(t, "the failed append", func() error { return <-done }); !errors.Is(err, full) {
		t.Fatalf("a follower's failed append: %v, want the disk's error", err)
	}
	if last, _ := d.LastIndex(); last != 0 {
		t.Fatalf("LastIndex %d after a failed follower's append, want 0", last)
	}
	done, _ = blocked(func() error { return d.StoreLogs(entries(1, 2)) })
	inner.gate <- nil
	if err := returnsWithin(t, "the append again", func() error { return <-done }); err != nil {
		t.Fatal(err)
	}

	// A leader's append that fails stays queued and readable (Raft counts
	// it stored): the waiters for it fail, a new append is refused (the
	// leader steps down), and the writer tries again until the disk takes
	// it.
	leading(d)
	if err := d.StoreLogs(entries(3, 4)); err != nil {
		t.Fatal(err)
	}
	wait, _ := blocked(func() error { return d.waitDurable(4, nil) })
	inner.gate <- full
	if err := returnsWithin(t, "the waiter", func() error { return <-wait }); !errors.Is(err, full) {
		t.Fatalf("waiting for a failed leader's append: %v, want the disk's error", err)
	}
	if err := d.StoreLogs(entries(5, 5)); !errors.Is(err, full) {
		t.Fatalf("an append while the writer retries: %v, want the disk's error", err)
	}
	var l raft.Log
	if err := d.GetLog(4, &l); err != nil || string(l.Data) != "e4" {
		t.Fatalf("GetLog(4) while retrying: %q, %v", l.Data, err)
	}
	inner.gate <- full // the retry fails too
	inner.gate <- nil  // and the next one passes
	if err := returnsWithin(t, "waitDurable after the retry", func() error { return d.waitDurable(4, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := d.StoreLogs(entries(5, 5)); err != nil {
		t.Fatalf("an append once the disk took the entries: %v", err)
	}
	inner.gate <- nil
	if err := returnsWithin(t, "waitDurable(5)", func() error { return d.waitDurable(5, nil) }); err != nil {
		t.Fatal(err)
	}
}

func TestDeferredLogDeleteRange(t *testing.T) {
	inner := newGatedLog()
	d := openDeferred(t, inner)
	stepDown := leading(d)
	if err := d.StoreLogs(entries(1, 5)); err != nil {
		t.Fatal(err)
	}
	go func() { inner.gate <- nil }()
	if err := returnsWithin(t, "waitDurable(5)", func() error { return d.waitDurable(5, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := d.StoreLogs(entries(6, 8)); err != nil {
		t.Fatal(err)
	}

	// Compacting the head waits for nothing it does not delete... but
	// deletes on disk what it names, while 6..8 are still queued.
	if err := returnsWithin(t, "compaction", func() error { return d.DeleteRange(1, 2) }); err != nil {
		t.Fatal(err)
	}
	if first, _ := d.FirstIndex(); first != 3 {
		t.Fatalf("FirstIndex %d after compaction, want 3", first)
	}
	if got := d.durableIndex(); got != 5 {
		t.Fatalf("durable index %d after compaction, want 5", got)
	}

	// A former leader's tail that the new leader contradicts, 5..8, part
	// on disk and part queued (the writer is stuck on it): the queued part
	// is dropped, never written, and the durable index drops below the
	// tail until the entries replacing it are written.
	stepDown()
	inner.gate <- errors.New("disk full") // the writer's attempt at 6..8
	if err := returnsWithin(t, "a tail's deletion", func() error { return d.DeleteRange(5, 8) }); err != nil {
		t.Fatal(err)
	}
	if last, _ := d.LastIndex(); last != 4 {
		t.Fatalf("LastIndex %d after deleting the tail, want 4", last)
	}
	if got := d.durableIndex(); got != 4 {
		t.Fatalf("durable index %d after deleting the tail, want 4", got)
	}
	replaced := entries(5, 6)
	for _, l := range replaced {
		l.Term = 2
	}
	done, _ := blocked(func() error { return d.StoreLogs(replaced) })
	inner.gate <- nil
	if err := returnsWithin(t, "the replacing append", func() error { return <-done }); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := d.GetLog(6, &l); err != nil || l.Term != 2 {
		t.Fatalf("entry 6 after the rewrite: term %d, %v", l.Term, err)
	}
	if calls := inner.appends(); fmt.Sprint(calls) != "[[1 5] [5 6]]" {
		t.Fatalf("appends %v: the dropped entries must never reach the disk", calls)
	}
}

func TestDeferredLogCloseWritesWhatIsQueued(t *testing.T) {
	inner := newGatedLog()
	d, err := newDeferredLog(inner)
	if err != nil {
		t.Fatal(err)
	}
	leading(d)
	if err := d.StoreLogs(entries(1, 3)); err != nil {
		t.Fatal(err)
	}
	go func() { inner.gate <- nil }()
	if err := returnsWithin(t, "Close", d.Close); err != nil {
		t.Fatal(err)
	}
	if last, _ := inner.LastIndex(); last != 3 {
		t.Fatalf("the log underneath ends at %d after Close, want 3", last)
	}
	if err := d.StoreLogs(entries(4, 4)); !errors.Is(err, errLogClosed) {
		t.Fatalf("an append after Close: %v, want errLogClosed", err)
	}
	if err := d.waitDurable(4, nil); !errors.Is(err, errLogClosed) {
		t.Fatalf("a wait after Close: %v, want errLogClosed", err)
	}
}

// Under concurrent readers, a leader's appends and the writer, every read
// sees the entry appended at its index, and everything reaches the disk in
// order.
func TestDeferredLogConcurrentReadsSeeEveryEntry(t *testing.T) {
	inner := raft.NewInmemStore()
	d := openDeferred(t, inner)
	leading(d)
	const total = 5000
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appended sync.Map
	errs := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l raft.Log
			for i := uint64(1); ; i = i%total + 1 {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := appended.Load(i); !ok {
					continue
				}
				if err := d.GetLog(i, &l); err != nil || string(l.Data) != fmt.Sprintf("e%d", i) {
					errs <- fmt.Errorf("GetLog(%d) = %q, %v", i, l.Data, err)
					return
				}
			}
		}()
	}
	for i := uint64(1); i <= total; i += 5 {
		if err := d.StoreLogs(entries(i, i+4)); err != nil {
			t.Fatal(err)
		}
		for j := i; j <= i+4; j++ {
			appended.Store(j, true)
		}
	}
	if err := d.waitDurable(total, nil); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	var l raft.Log
	for i := uint64(1); i <= total; i++ {
		if err := inner.GetLog(i, &l); err != nil || string(l.Data) != fmt.Sprintf("e%d", i) {
			t.Fatalf("the log underneath, entry %d: %q, %v", i, l.Data, err)
		}
	}
}

// appliedFuture is a committed and applied entry, as Raft hands it back.
type appliedFuture struct {
	index   uint64
	results []engine.Result
}

func (f appliedFuture) Error() error  { return nil }
func (f appliedFuture) Index() uint64 { return f.index }
func (f appliedFuture) Response() any { return &appliedEntry{results: f.results} }

// Rule 3: a leader answers an entry's requests once its own disk holds the
// entry, although Raft counted its copy (and committed the entry) before.
func TestProposerAnswersOnceTheLeaderHoldsTheEntry(t *testing.T) {
	inner := newGatedLog()
	d := openDeferred(t, inner)
	leading(d)
	if err := d.StoreLogs(entries(1, 1)); err != nil {
		t.Fatal(err)
	}
	p := &proposer{shard: 0, self: "n1", durable: d, inflight: make(chan inflightEntry, 1), slots: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { p.complete(); close(done) }()
	defer func() { close(p.inflight); <-done }()

	r, answered := newRequest([]engine.Command{sliding("k", 10, 1000)})
	r.state.Store(reqSent)
	p.slots <- struct{}{}
	p.inflight <- inflightEntry{future: appliedFuture{index: 1, results: []engine.Result{{Decision: engine.Decision{Allowed: true}}}}, proposed: time.Now(), reqs: []*Request{r}}
	select {
	case <-answered:
		t.Fatal("the request was answered before the leader's disk held its entry")
	case <-time.After(50 * time.Millisecond):
	}
	inner.gate <- nil
	select {
	case <-answered:
	case <-time.After(time.Second):
		t.Fatal("the request was not answered once its entry was on disk")
	}
	if r.Err != nil || !r.Results[0].Decision.Allowed {
		t.Fatalf("answer %+v, %v", r.Results[0], r.Err)
	}

	// When the disk fails instead, the outcome is unknown: the request
	// ends "may have been counted", a TRYAGAIN.
	if err := d.StoreLogs(entries(2, 2)); err != nil {
		t.Fatal(err)
	}
	r, answered = newRequest([]engine.Command{sliding("k", 10, 1000)})
	r.state.Store(reqSent)
	p.slots <- struct{}{}
	p.inflight <- inflightEntry{future: appliedFuture{index: 2, results: []engine.Result{{Decision: engine.Decision{Allowed: true}}}}, proposed: time.Now(), reqs: []*Request{r}}
	inner.gate <- errors.New("input/output error")
	select {
	case <-answered:
	case <-time.After(time.Second):
		t.Fatal("the request was not answered once the disk failed")
	}
	if !errors.Is(r.Err, ErrMayHaveBeenCounted) {
		t.Fatalf("a request whose entry the leader could not write: %v, want ErrMayHaveBeenCounted", r.Err)
	}
	go func() { inner.gate <- nil }() // the writer's retry, so that it can close
}

// capturingTransport records the appends sent through it.
type capturingTransport struct {
	netTransport
	sent []raft.AppendEntriesRequest
}

func (c *capturingTransport) AppendEntries(_ raft.ServerID, _ raft.ServerAddress, args *raft.AppendEntriesRequest, _ *raft.AppendEntriesResponse) error {
	c.sent = append(c.sent, *args)
	return nil
}

// Rule 2: the commit index a leader sends is no higher than what its own
// disk holds.
func TestAppendsCarryNoCommitPastTheLeadersDisk(t *testing.T) {
	inner := newGatedLog()
	d := openDeferred(t, inner)
	leading(d)
	if err := d.StoreLogs(entries(1, 3)); err != nil {
		t.Fatal(err)
	}
	inner.gate <- nil
	if err := d.waitDurable(3, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.StoreLogs(entries(4, 6)); err != nil { // not yet written
		t.Fatal(err)
	}
	c := &capturingTransport{}
	v := &verifiedCommits{netTransport: c}
	send := func(commit uint64) uint64 {
		v.AppendEntries("n2", "n2", &raft.AppendEntriesRequest{Entries: []*raft.Log{{Index: 6}}, LeaderCommitIndex: commit}, &raft.AppendEntriesResponse{})
		return c.sent[len(c.sent)-1].LeaderCommitIndex
	}
	if got := send(5); got != 5 {
		t.Fatalf("before bound: commit index %d sent, want 5 as Raft set it", got)
	}
	v.bound(d)
	if got := send(5); got != 3 {
		t.Fatalf("commit index %d sent with entries 4..6 not on the leader's disk, want 3", got)
	}
	if got := send(2); got != 2 {
		t.Fatalf("commit index %d sent, want 2 as Raft set it", got)
	}
	inner.gate <- nil
	if err := d.waitDurable(6, nil); err != nil {
		t.Fatal(err)
	}
	if got := send(6); got != 6 {
		t.Fatalf("commit index %d sent once 4..6 are on disk, want 6", got)
	}
}
