package server

import (
	"errors"
	"time"

	"github.com/tidwall/redcon"
)

// A connection's loop reads what the client sent into a buffer it keeps,
// answers every complete command in it as one pipeline (redcon's
// ReadNextCommand parses them in place, allocating nothing), writes all the
// replies with one write, and reads again. redcon's own server loop would
// copy each command it reads into two new allocations: garbage per command,
// which a pipelining client turns into a large share of the server's CPU
// (docs/performance.md).

// readSize is how much a connection reads at a time; its buffer grows only
// to hold a command longer than that (the guard bounds how long).
const readSize = 16 << 10

// serve runs the connection until it closes.
func (c *conn) serve() {
	defer c.release()
	defer c.nc.Close()
	if !c.tlsHandshake() {
		return
	}
	if c.srv.protectedRefuses(c.nc.RemoteAddr()) {
		c.srv.stats.rejected.Add(1)
		c.nc.SetWriteDeadline(time.Now().Add(refuseTimeout))
		c.nc.Write([]byte(deniedReply))
		return
	}
	c.serveFrom(0)
}

// release ends the connection for the server, once its socket is closed:
// its client-side caching stops and the registry forgets it.
func (c *conn) release() {
	c.stopTracking()
	c.srv.forget(c)
}

// serveFrom reads, answers and writes pipelines until the connection ends.
// kept is how many bytes of an incomplete command are at the front of c.in.
func (c *conn) serveFrom(kept int) {
	for {
		n, err := c.read(kept)
		if n == 0 && err != nil {
			return
		}
		rest, ok, werr := c.answerAndWrite(c.in[:kept+n])
		if werr != nil || !ok || err != nil {
			return
		}
		// Keep the incomplete command's bytes, moved to the front.
		kept = copy(c.in, rest)
	}
}

// answerAndWrite answers the commands in in and writes the replies, under
// the write lock that keeps invalidation pushes out of them (see
// tracking.go). It returns what answer does, and the write's error.
func (c *conn) answerAndWrite(in []byte) (rest []byte, ok bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	rest, out, ok := c.answerPipeline(in)
	if len(out) > 0 {
		_, err = c.nc.Write(out)
	}
	c.keepOut(out)
	return rest, ok, err
}

// answerPipeline answers the commands in in, their replies after the
// invalidations queued before they ran (those are for writes applied before
// them). The caller holds c.wmu and writes out, then gives it to keepOut.
func (c *conn) answerPipeline(in []byte) (rest, out []byte, ok bool) {
	out = c.out[:0]
	if c.tracker != nil {
		out = c.tracker.takePending(out, c.resp3.Load())
	}
	return c.answer(in, out)
}

// keepOut keeps a pipeline's reply buffer for the next one, unless it grew
// huge: an idle connection does not pin it.
func (c *conn) keepOut(out []byte) {
	if cap(out) > 1<<20 {
		out = nil
	}
	c.out = out[:0]
}

// read reads more bytes after the kept ones, growing the buffer when they
// fill it, and returns how many it read.
func (c *conn) read(kept int) (int, error) {
	if kept+readSize/4 > len(c.in) {
		grown := make([]byte, max(2*len(c.in), kept+readSize))
		copy(grown, c.in[:kept])
		c.in = grown
	} else if kept == 0 && len(c.in) > 4*readSize {
		c.in = make([]byte, readSize) // a large command is done: give its buffer back
	}
	return c.nc.Read(c.in[kept:])
}

// answer runs every complete command in in and appends the replies to out.
// It returns the bytes of an incomplete last command, and false when the
// connection must close (a protocol error, whose reply is in out, or QUIT).
//
// On an event loop it may stop short, returning the unanswered commands as
// the rest: when a segment it sent is not answered yet (c.nowait.suspended,
// with shards that answer later), or after a command that may wait, which a
// goroutine answers (c.nowait.aside); the loop calls it again once they
// are.
func (c *conn) answer(in, out []byte) (rest, reply []byte, ok bool) {
	obs := c.srv.cfg.Observer
	run := &c.run
	if !run.resumed {
		*run = pipelineRun{}
		if obs != nil {
			run.start = time.Now()
		}
	}
	run.resumed = false
	for !c.quit {
		if rest, ok := skipNegativeCount(in); ok {
			in = rest // "*-1": an empty command, as Redis reads it
			continue
		}
		if !c.authed {
			if err := checkUnauthenticated(in); err != nil {
				if out = c.flush(out); c.nowait.suspended {
					run.resumed = true
					return in, out, true // refused again once resumed
				}
				return nil, appendError(out, err), false
			}
		}
		complete, args, _, leftover, err := redcon.ReadNextCommand(in, c.args[:0])
		if err != nil {
			if out = c.flush(out); c.nowait.suspended {
				run.resumed = true
				return in, out, true // the error comes again once resumed
			}
			return nil, appendError(out, protocolError(err)), false
		}
		if !complete {
			break
		}
		c.args = args[:0]
		if len(args) == 0 {
			in = leftover
			continue // an empty line, or *0
		}
		out = c.exec(args, out)
		if c.nowait.unanswered {
			c.nowait.unanswered = false
			if !c.nowait.aside {
				break // the command stays in in, for later
			}
		}
		in = leftover
		run.commands++
		if c.nowait.aside {
			c.startAside(args)
			break
		}
		if c.nowait.suspended {
			break // EXEC sent its transaction
		}
	}
	if !c.nowait.waits() {
		out = c.flush(out)
	}
	if c.nowait.waits() {
		run.resumed = true
		return in, out, true
	}
	if c.tracker != nil && len(c.tracker.late) > 0 {
		out = c.appendLate(out)
	}
	if run.commands > 0 {
		c.srv.stats.commands.Add(run.commands)
		now := time.Now()
		c.lastCmd.Store(now.UnixMilli())
		if obs != nil {
			observe(obs, run.commands, run.keyed, now.Sub(run.start))
		}
	}
	return in, out, !c.quit
}

// pipelineRun is what answer counts of one pipeline, kept across the
// suspensions of a connection that does not wait.
type pipelineRun struct {
	start    time.Time // when the pipeline began, for the observer
	commands int64     // commands answered
	keyed    int64     // of which sent to the shards
	resumed  bool      // the next answer goes on with this pipeline
}

// protocolError is the reply to bytes redcon cannot parse, in Redis's words.
func protocolError(err error) error {
	return errors.New("ERR " + err.Error())
}
