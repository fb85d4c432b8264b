package server

import (
	"fmt"
	"testing"

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
