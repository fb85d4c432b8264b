package cluster

import (
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/persistence"
)

// A snapshot of a shard (Raft's, a backup's) is taken in two steps, so that
// the shard never waits for its keys to be encoded: under the replica's
// lock, between two batches, the engine freezes its state (engine.Capture:
// a copy of its chunk pointers, well under a millisecond at millions of
// keys); then another goroutine (Raft's snapshot goroutine, a backup's
// caller) encodes the frozen state into a snapshot frame while the shard
// goes on applying batches. Before each batch the shard is told how far
// the encoding has gone, so that it stops keeping the chunks already
// written.

// capture is a shard's state being encoded outside its replica's lock.
type capture struct {
	r     *replica
	shard *engine.Shard // the shard frozen: a restore may replace the replica's
	c     *engine.Capture
	done  atomic.Int64 // parts written
	// What the log says of it: when it was taken, how long the shard
	// waited for that, the shard's chunk copies then, and the payload's
	// size once written.
	taken  time.Time
	held   time.Duration
	copies int64
	size   int
	// step is how many chunk pointers fill takes under the lock at a time
	// (fillStep; tests take fewer, to interleave more).
	step int
	// copyBound is what the capture adds to capturesCopyBound until it
	// ends (engine.Capture.CopyBound; zero once ended).
	copyBound int64
}

// capturesCopyBound is the sum of the CopyBound of the captures in
// progress in this process: process-wide, as the heap is.
var capturesCopyBound atomic.Int64

// CaptureCopyBound is the most memory the shards of this process may yet
// allocate for the chunk copies of the snapshots and backups in progress
// (engine.Capture.CopyBound), which stay live until each ends: the
// collector's pacer lets the heap grow by it (gcpacer.Config.Reserved)
// rather than collect again and again for memory that a collection cannot
// free.
func CaptureCopyBound() uint64 { return uint64(max(capturesCopyBound.Load(), 0)) }

// startCapture freezes r's state. r.mu must be held; end the capture
// (end) when done with it.
func (r *replica) startCapture() *capture {
	start := time.Now()
	c := &capture{r: r, shard: r.shard, c: r.shard.CaptureInSteps(), copies: r.shard.CaptureCopies(), step: fillStep}
	c.copyBound = c.c.CopyBound()
	capturesCopyBound.Add(c.copyBound)
	c.taken = time.Now()
	c.held = c.taken.Sub(start)
	r.captures = append(r.captures, c)
	return c
}

// applyLocked applies a batch at us (Unix µs), r.mu held, telling the
// shard first how far its captures in progress have been written.
func (r *replica) applyLocked(us int64, cmds []engine.Command, results []engine.Result) {
	for _, c := range r.captures {
		r.shard.CaptureProgress(c.c, int(c.done.Load()))
	}
	r.shard.ApplyMicros(us, cmds, results)
}

// writeFrame writes the captured state to w as a snapshot frame
// (persistence.WriteSnapshot's): it takes the chunk pointers under the
// replica's lock, at the server's priority, then the encoder (encoder.go)
// sizes the state and writes it part by part as it is encoded.
func (c *capture) writeFrame(w io.Writer) error {
	c.fill()
	var err error
	encoders.run(c.r.snapshotNice, func() { err = c.encode(w) })
	return err
}

// encode sizes the captured state and writes it to w as a snapshot frame,
// part by part as it is encoded.
func (c *capture) encode(w io.Writer) error {
	sw, err := persistence.NewSnapshotWriter(w, engine.SnapshotFormat, uint64(c.c.Size()))
	c.size = c.c.Size()
	if err != nil {
		return err
	}
	var part []byte
	for c.c.Encoded() < c.c.Parts() {
		part = c.c.AppendNext(part[:0])
		if _, err := sw.Write(part); err != nil {
			return err
		}
		c.done.Store(int64(c.c.Encoded()))
		// A part is some 10 µs of work: a batch or a connection waiting
		// for a processor gets one now, not at the scheduler's next
		// preemption, up to 10 ms away.
		runtime.Gosched()
	}
	return sw.Close()
}

// fill takes the captured chunk pointers, fillStep at a time under the
// replica's lock, between the shard's batches: at 30 million keys there
// are 117,000 of them, and copying them at once held the shard for 0.5-0.7
// ms (0.15-0.3 ms at 10 million).
func (c *capture) fill() {
	c.c.Reserve()
	for {
		c.r.mu.Lock()
		done := c.shard.FillCapture(c.c, c.step)
		c.r.mu.Unlock()
		if done {
			return
		}
		runtime.Gosched()
	}
}

// fillStep is how many chunk pointers fill takes a step: a million keys'
// worth, two copies of 32 KiB.
const fillStep = 4096

// end tells the shard the capture is over: it keeps nothing more for it.
// With a log, when it was written, it says what the capture cost: how long the shard waited
// while it was taken (held), how long it took to write (took), and the
// chunks the shard copied meanwhile.
func (c *capture) end(log *slog.Logger, what string) {
	c.r.mu.Lock()
	c.shard.EndCapture(c.c)
	c.r.captures = slices.DeleteFunc(c.r.captures, func(o *capture) bool { return o == c })
	capturesCopyBound.Add(-c.copyBound)
	c.copyBound = 0
	copies := c.shard.CaptureCopies() - c.copies
	c.r.mu.Unlock()
	if log != nil && c.size > 0 {
		log.Info(what, "shard", c.r.index, "bytes", c.size, "held", c.held, "took", time.Since(c.taken),
			"chunk_copies", copies, "copied_bytes", copies*engine.ChunkBytes)
	}
}
