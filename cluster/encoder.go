package cluster

import (
	"os"
	"runtime"
	"sync"
)

// A snapshot's encoding (capture.writeFrame) is seconds of work for a
// shard of millions of keys, done while the shard goes on deciding. On a
// machine of two processors, an encoder that ran as any other goroutine
// took one of them from the decisions for those seconds: at ten million
// keys, decisions during a snapshot were 2-4x slower at p99 than outside
// one. So an encoder runs on a thread of its own at a low scheduling
// priority (nice, DefaultSnapshotNice), and the runtime is given one more
// processor (GOMAXPROCS) while it runs: the decisions keep every processor
// they had, and the kernel gives the encoder's thread only the time they
// leave (docs/performance.md#the-encoders-thread). Either alone did less:
// a low priority alone was worse than none (holding one of two
// processors, the encoder's thread left the runtime one whenever the
// kernel ran something else), and a processor more alone cut the time
// decisions lost to a snapshot by a third, where both cut it by three
// quarters.
//
// The cost: on a machine whose CPUs are busy with other work, a snapshot
// takes longer (the log grows meanwhile, and is cut when it is written),
// and a collection may wait for the encoder's thread to reach a safe point.
// --snapshot-nice 0 encodes as before, as any other goroutine.

// MaxSnapshotNice is the lowest priority a thread can have (nice 19).
const MaxSnapshotNice = 19

// DefaultSnapshotNice is the scheduling priority snapshots are encoded at
// unless RaftConfig.SnapshotNice says otherwise: the lowest.
const DefaultSnapshotNice = MaxSnapshotNice

// encoderProcs counts the encoders running, process-wide as GOMAXPROCS
// is: the first raises GOMAXPROCS from base, each one more, and the last to
// end gives it back.
type encoderProcs struct {
	mu      sync.Mutex
	running int
	base    int
	// setProcs sets GOMAXPROCS and returns the setting before
	// (runtime.GOMAXPROCS), and giveBack ends the raise (restoreProcs):
	// tests count instead.
	setProcs func(int) int
	giveBack func(base int)
}

// encoders are this process's.
var encoders = encoderProcs{setProcs: runtime.GOMAXPROCS, giveBack: restoreProcs}

// run runs encode on a thread of its own at priority nice (1 to 19), with
// one more processor while it does, and returns when encode does. With nice
// 0 it calls encode as it is.
func (e *encoderProcs) run(nice int, encode func()) {
	if nice <= 0 {
		encode()
		return
	}
	e.start()
	defer e.end()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Never unlocked: the thread ends with the goroutine, and its
		// priority with it, rather than going back to the runtime's pool
		// for a goroutine that should run at the server's.
		runtime.LockOSThread()
		lowerThreadPriority(nice)
		encode()
	}()
	<-done
}

func (e *encoderProcs) start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running == 0 {
		e.base = e.setProcs(0)
	}
	e.running++
	// At most twice the base: beyond that, more encoders share the extra
	// processors (a node whose shards all snapshot at once).
	e.setProcs(e.base + min(e.running, e.base))
}

func (e *encoderProcs) end() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	if e.running > 0 {
		e.setProcs(e.base + min(e.running, e.base))
		return
	}
	e.giveBack(e.base)
}

// restoreProcs sets GOMAXPROCS back once no encoder runs: to the
// operator's, when the GOMAXPROCS variable set it, else to the runtime's
// default, which follows a container's CPU limit (a call to GOMAXPROCS
// stops that).
func restoreProcs(base int) {
	if os.Getenv("GOMAXPROCS") != "" {
		runtime.GOMAXPROCS(base)
		return
	}
	runtime.SetDefaultGOMAXPROCS()
}
