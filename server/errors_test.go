package server

import (
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
)

// TestCommandErrorsReachTheClient checks that errors found while parsing a
// command or applying it on its shard go out with their Redis wording, in
// their place among the replies.
func TestCommandErrorsReachTheClient(t *testing.T) {
	s := startServer(t)
	s.dial(t).run([]step{
		{cmd("RL.SLIDING", "k", "10", "1000"), decision2(1, 10, 9, 0, 2000)},
		{cmd("RL.FIXED", "k", "10", "1000"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{cmd("RL.SLIDING", "k", "0", "1000"), fmt.Sprintf("-ERR limit must be an integer from 1 to %d\r\n", int64(engine.MaxCount))},
		{cmd("RL.SLIDING", "k", "10", "1000", "COST"), "-ERR syntax error\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000", "COST", "x"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("RL.SLIDING", "k", "10"), "-ERR wrong number of arguments for 'rl.sliding' command\r\n"},
		{cmd("TYPE", "k"), "+rl.sliding\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), decision2(1, 10, 8, 0, 2000)},
	})
}

// TestShardErrorsReachTheClient stops the shards under a running server:
// every command that needs them is answered with their error, single-key,
// multi-key and every-shard commands alike, and the server stays up.
func TestShardErrorsReachTheClient(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect(decision2(1, 10, 9, 0, 2000), "RL.SLIDING", "k", "10", "1000")
	s.shards.Close()
	const tryAgain = "-TRYAGAIN rlserver is shutting down\r\n"
	c.run([]step{
		{cmd("RL.SLIDING", "k", "10", "1000"), tryAgain},
		{cmd("DEL", "a", "b", "c"), tryAgain},
		{cmd("DBSIZE"), tryAgain},
		{cmd("FLUSHALL"), tryAgain},
		{cmd("SCAN", "0"), tryAgain},
		{cmd("DEBUG", "DIGEST"), tryAgain},
		{cmd("DEBUG", "CLOCK", "SET", "1700000000000"), tryAgain},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), wireQueued},
		{cmd("EXEC"), arrayReply(tryAgain)},
		{cmd("PING"), "+PONG\r\n"},
	})
}

// TestErrorWords: each typed error gets its first word here, in one place;
// a text that has its own (commands', the server's, an older peer's reply)
// goes out as it is, and nothing is allocated for it.
func TestErrorWords(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{engine.ErrWrongType, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{engine.ErrOOM, "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
		{engine.ErrZeroRate, "-Cell error: Zero rates are not supported\r\n"},
		{fmt.Errorf("%w 'x'", engine.ErrNoPolicy), "-ERR no such policy 'x'\r\n"},
		{&engine.Error{Code: 200, Msg: "from a newer node"}, "-ERR from a newer node\r\n"},
		{cluster.ErrNotApplied, "-TRYAGAIN nothing was counted, retry\r\n"},
		{fmt.Errorf("shard 2: no leader was elected in time: %w", cluster.ErrNotApplied),
			"-TRYAGAIN shard 2: no leader was elected in time: nothing was counted, retry\r\n"},
		{fmt.Errorf("shard 2, leader n1: no answer within the request timeout: %w", cluster.ErrMayHaveBeenCounted),
			"-UNCERTAIN shard 2, leader n1: no answer within the request timeout: it may have been counted\r\n"},
		{&cluster.ForwardedError{Peer: "n3", Text: "shard 2, leader n3: the leader lost its leadership: it may have been counted", Err: cluster.ErrMayHaveBeenCounted},
			"-UNCERTAIN forwarded to n3: shard 2, leader n3: the leader lost its leadership: it may have been counted\r\n"},
		{fmt.Errorf("%w (shard 3)", cluster.ErrShuttingDown), "-TRYAGAIN rlserver is shutting down (shard 3)\r\n"},
		{&cluster.Failure{Msg: "shard commit failed: bad\nentry"}, "-ERR shard commit failed: bad entry\r\n"},
		{commands.ErrSyntax, "-ERR syntax error\r\n"},
	} {
		if got := string(appendError(nil, c.err)); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
	b := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { b = appendError(b[:0], commands.ErrSyntax) }); n != 0 {
		t.Errorf("a text error reply allocates %v times", n)
	}
}
