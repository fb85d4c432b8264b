package tests

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// SIGTERM and SIGINT stop rlserver with exit status 0 after the requests it
// has answered; it logs the shutdown, stops listening, and clients see their
// connection closed, not a half-written reply.
func TestSignalsStopCleanly(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			srv := startServer(t)
			c := srv.Client(t, 3)
			pipe := c.Pipeline()
			cmds := make([]*redis.Cmd, 500)
			for i := range cmds {
				cmds[i] = pipe.Do(ctx(t), "RL.SLIDING", "bye", 1000, 60000)
			}
			if _, err := pipe.Exec(ctx(t)); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			if d, err := parseDecision(cmds[499].Val()); err != nil || d.Remaining != 500 {
				t.Fatalf("last reply %v (%v), want 500 remaining", d, err)
			}

			srv.ExpectExit()
			if err := srv.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-srv.Exited():
			case <-time.After(rlproc.StopTimeout):
				t.Fatalf("still running %v after %v", rlproc.StopTimeout, sig)
			}
			if code := srv.ExitCode(); code != 0 {
				t.Fatalf("exit %d after %v, want 0; stderr:\n%s", code, sig, srv.Log())
			}
			log := srv.Log()
			if !strings.Contains(log, `msg="shutting down"`) || !strings.Contains(log, "msg=stopped") {
				t.Errorf("the log does not record the shutdown:\n%s", log)
			}
			if _, err := c.Do(ctx(t), "PING").Result(); err == nil {
				t.Errorf("PING answered after the server exited")
			}
			if conn, err := net.DialTimeout("tcp", srv.Addr, time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections", srv.Addr)
			}
		})
	}
}

// Under load, SIGTERM ends every client's stream of replies on a reply
// boundary: each reply read is whole, then the connection closes.
func TestSignalUnderLoad(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	const clients = 8
	var wg sync.WaitGroup
	problems := make(chan string, clients)
	started := make(chan struct{}, clients)
	conns := make([]*rawConn, clients)
	for i := range conns {
		conns[i] = dialRaw(t, srv.Addr)
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "load:" + strconv.Itoa(i)
			for n := 0; n < 1_000_000; n++ {
				got, err := roundTrip(conns[i], command("RL.SLIDING", key, "1000000000", "60000"))
				if err != nil {
					if !isClosed(err) {
						problems <- fmt.Sprintf("after %d replies: %v (%q)", n, err, got)
					}
					return
				}
				if !strings.HasPrefix(got, "*[:1 :1000000000 :") {
					problems <- fmt.Sprintf("reply %d = %s", n, got)
					return
				}
				if n == 100 {
					started <- struct{}{}
				}
			}
			problems <- "never cut off"
		}()
	}
	for range clients {
		select {
		case <-started:
		case <-time.After(rlproc.StopTimeout):
			t.Fatal("clients made no progress")
		}
	}
	if code := srv.Stop(t); code != 0 {
		t.Fatalf("exit %d under load; stderr:\n%s", code, srv.Log())
	}
	wg.Wait()
	close(problems)
	for p := range problems {
		t.Errorf("client: %s", p)
	}
}

// roundTrip sends one command on a raw connection and reads its reply.
func roundTrip(c *rawConn, cmd string) (string, error) {
	c.conn.SetWriteDeadline(time.Now().Add(cmdTimeout))
	if _, err := c.conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	return c.tryReply()
}

// isClosed reports the errors of a connection the server closed: EOF at a
// reply boundary, a reset, or a broken pipe. A timeout or a malformed reply
// is not one of them.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// SIGTERM must not swallow the replies of decisions already taken: a
// decision spends budget, so a client that never hears the answer cannot
// account for it. Here a client sends a pipeline whose replies outgrow the
// socket buffers before it starts reading (a slow reader), so the server has
// executed many decisions whose replies are still waiting to be written when
// SIGTERM arrives. Once it has the signal, the client reads: it must receive
// a reply for every decision the server had taken, in order.
func TestShutdownDeliversRepliesOfExecutedDecisions(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	observer := srv.Client(t, 2)
	c := dialRaw(t, srv.Addr)

	// The longest window there is: a fixed window starts at a multiple of
	// its length, and one of a minute could start anew during the test
	// (it did, once: a reply with the full budget again).
	const limit, n, window = 1_000_000_000, 300_000, "1000000000000"
	one := command("RL.FIXED", "inflight", strconv.Itoa(limit), window)
	written := make(chan error, 1)
	go func() {
		c.conn.SetWriteDeadline(time.Now().Add(2 * rlproc.StopTimeout))
		_, err := c.conn.Write([]byte(strings.Repeat(one, n)))
		written <- err
	}()
	// Until the server stalls on its writes, the count of decisions grows.
	var executed int64
	poll.Until(t, rlproc.StopTimeout, "the server to stall writing replies to a client that does not read", func() (bool, error) {
		now := infoInt(t, observer, "ratelimit", "rl_decisions_allowed")
		stalled := now > 0 && now == executed
		executed = now
		return stalled, nil
	})
	observer.Close()

	exited := make(chan int, 1)
	go func() { exited <- srv.Stop(t) }()
	poll.Until(t, rlproc.StopTimeout, "the shutdown to begin", func() (bool, error) {
		return strings.Contains(srv.Log(), `msg="shutting down"`), nil
	})
	var replies int64
	truncated := ""
	for {
		got, err := c.tryReply()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			truncated = fmt.Sprintf(", the last one cut short (%.40q...)", got)
			break
		}
		if err != nil {
			if !isClosed(err) {
				t.Fatalf("after %d replies: %v (%q)", replies, err, got)
			}
			break
		}
		replies++
		want := "*[:1 :" + strconv.Itoa(limit) + " :" + strconv.FormatInt(limit-replies, 10) + " :0 "
		if !strings.HasPrefix(got, want) {
			t.Fatalf("reply %d = %s, want %s...", replies, got, want)
		}
	}
	if code := <-exited; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, srv.Log())
	}
	<-written // the server closed the connection: the write has failed
	if replies < executed || truncated != "" {
		t.Fatalf("SIGTERM dropped the replies of decisions already taken: the server executed %d decisions "+
			"for a pipelining client, the client received only %d whole replies before the connection closed%s",
			executed, replies, truncated)
	}
}

// A node whose peers have stopped answering (frozen here) still stops
// within a service manager's patience: its shards close side by side, so
// their leadership hand-overs and waits for Raft's goroutines, each bounded,
// do not add up shard after shard.
func TestClusterNodeStopsPromptlyWhenItsPeersAreFrozen(t *testing.T) {
	t.Parallel()
	c := rlproc.StartCluster(t, rlproc.ClusterConfig{Shards: 6})
	for _, n := range c.Nodes[1:] {
		p := n.Process()
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Signal(syscall.SIGCONT) })
	}
	p := c.Nodes[0].Process()
	p.ExpectExit()
	start := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Measured with a log line at each phase (stop 35): the drain of the
	// client connections, 2 s (lingerTimeout); the node's background
	// loops, 0.1-2.3 s (catalogue proposals to a leader that does not
	// answer); Raft's shutdown bound, 5 s, once for all the groups side by
	// side, after a hand-over's election timeout when the node led: 7.1-9.4
	// s here, and more than 12 s twice under the whole suite's load. Closed
	// shard after shard, the seven groups' bounds alone would take 35 s.
	const patience = 20 * time.Second
	select {
	case <-p.Exited():
		t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(patience):
		t.Fatalf("still running %v after SIGTERM with its peers frozen; log:\n%s", patience, p.Log())
	}
	if code := p.ExitCode(); code != 0 {
		t.Fatalf("exit %d, want 0; log:\n%s", code, p.Log())
	}
}
