package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

const (
	wireQueued    = "+QUEUED\r\n"
	wireExecAbort = "-EXECABORT Transaction discarded because of previous errors.\r\n"
	wireCrossSlot = "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
	wireNotInTx   = "-ERR Command not allowed inside a transaction\r\n"
)

// TestMultiExec checks a transaction of keyed commands sharing a slot, with
// the server commands MULTI allows: QUEUED for each, then EXEC's array.
func TestMultiExec(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.run([]step{
		{cmd("RL.SLIDING", "{u}:b", "5", "1000"), decision2(1, 5, 4, 0, 2000)},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "{u}:a", "2", "1000"), wireQueued},
		{cmd("RL.SLIDING", "{u}:a", "2", "1000"), wireQueued},
		{cmd("RL.SLIDING", "{u}:a", "2", "1000"), wireQueued},
		{cmd("PING"), wireQueued},
		{cmd("ECHO", "hi"), wireQueued},
		{cmd("TIME"), wireQueued},
		{cmd("DEL", "{u}:a", "{u}:b", "{u}:c"), wireQueued},
		{cmd("EXISTS", "{u}:a"), wireQueued},
		{cmd("EXEC"), arrayReply(
			decision2(1, 2, 1, 0, 2000), decision2(1, 2, 0, 0, 2000), decision2(0, 2, 0, 1500, 2000),
			"+PONG\r\n", bulkReply("hi"), arrayReply(bulkReply("1700000000"), bulkReply("0")),
			intReply(2), intReply(0))},
		{cmd("EXEC"), "-ERR EXEC without MULTI\r\n"},
		{cmd("DISCARD"), "-ERR DISCARD without MULTI\r\n"},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("EXEC"), "*0\r\n"},
	})
}

// TestMultiRefusals checks what dooms a transaction, with Redis's errors at
// queue time and EXECABORT at EXEC, and that nothing queued runs.
func TestMultiRefusals(t *testing.T) {
	s := startServer(t)
	if cluster.Slot([]byte("a")) == cluster.Slot([]byte("b")) {
		t.Fatal("a and b share a slot")
	}
	tests := []struct {
		name    string
		refused step
	}{
		{"keys in another slot", step{cmd("RL.SLIDING", "b", "10", "1000"), wireCrossSlot}},
		{"keys in two slots", step{cmd("DEL", "a", "b"), wireCrossSlot}},
		{"unknown command", step{cmd("NOSUCH"), "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"}},
		{"wrong arity", step{cmd("RL.SLIDING", "a"), "-ERR wrong number of arguments for 'rl.sliding' command\r\n"}},
		{"bad argument", step{cmd("RL.SLIDING", "a", "ten", "1000"), "-ERR value is not an integer or out of range\r\n"}},
		{"key too long", step{cmd("EXISTS", strings.Repeat("a", 129)), "-ERR key is 129 bytes long, longer than the 128 bytes allowed (--max-key-len)\r\n"}},
		{"DBSIZE", step{cmd("DBSIZE"), wireNotInTx}},
		{"FLUSHALL", step{cmd("FLUSHALL"), wireNotInTx}},
		{"SCAN", step{cmd("SCAN", "0"), wireNotInTx}},
		{"CLIENT SETNAME", step{cmd("CLIENT", "SETNAME", "x"), wireNotInTx}},
		{"HELLO", step{cmd("HELLO", "3"), wireNotInTx}},
		{"SELECT", step{cmd("SELECT", "0"), wireNotInTx}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			c.expect("+OK\r\n", "FLUSHALL")
			c.run([]step{
				{cmd("MULTI"), "+OK\r\n"},
				{cmd("RL.SLIDING", "a", "10", "1000"), wireQueued},
				tt.refused,
				{cmd("RL.SLIDING", "a", "10", "1000"), wireQueued},
				{cmd("EXEC"), wireExecAbort},
				{cmd("EXISTS", "a"), ":0\r\n"},
				{cmd("RL.SLIDING", "a", "10", "1000"), decision2(1, 10, 9, 0, 2000)}, // back to normal
			})
		})
	}
}

// TestMultiNestedAndDiscard checks a nested MULTI, which Redis refuses
// without dooming the transaction, and DISCARD.
func TestMultiNestedAndDiscard(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.run([]step{
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), wireQueued},
		{cmd("MULTI"), "-ERR MULTI calls can not be nested\r\n"},
		{cmd("EXEC"), arrayReply(decision2(1, 10, 9, 0, 2000))},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), wireQueued},
		{cmd("DISCARD"), "+OK\r\n"},
		{cmd("EXEC"), "-ERR EXEC without MULTI\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), decision2(1, 10, 8, 0, 2000)}, // the discarded one never ran
		{cmd("MULTI", "x"), "-ERR wrong number of arguments for 'multi' command\r\n"},
	})
}

// TestMultiRESP3AndPipelined checks a transaction sent in one write after
// HELLO 3: its replies come in order, decisions as maps.
func TestMultiRESP3AndPipelined(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	id := c.clientID()
	c.write(encode("HELLO", "3") + encode("MULTI") + encode("RL.SLIDING", "k", "1", "1000") +
		encode("RL.SLIDING", "k", "1", "1000") + encode("RL.INFO", "{k}:none") + encode("EXEC") + encode("PING"))
	want := []string{helloReply(true, id), "+OK\r\n", wireQueued, wireQueued, wireQueued,
		"*3\r\n" + decision3(1, 1, 0, 0, 2000) + decision3(0, 1, 0, 2000, 2000) + "_\r\n", "+PONG\r\n"}
	for i, w := range want {
		if got := c.read(); got != w {
			t.Fatalf("reply %d: got %q, want %q", i, got, w)
		}
	}
}

// TestMultiQuit checks that QUIT inside MULTI closes the connection at once
// and that the queued commands never run.
func TestMultiQuit(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.run([]step{
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), wireQueued},
		{cmd("QUIT"), "+OK\r\n"},
	})
	c.expectClosed()
	s.dial(t).expect(":0\r\n", "EXISTS", "k")
}

// TestMultiIsAtomic runs transactions of several decisions on one key from
// several connections at once: each transaction's decisions must come out
// consecutive, with no other connection's decision between them.
func TestMultiIsAtomic(t *testing.T) {
	s := startServer(t)
	const conns, txs, perTx = 4, 25, 5
	tx := encode("MULTI") + strings.Repeat(encode("RL.SLIDING", "hot", "1000000", "60000"), perTx) + encode("EXEC")
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runTransactions(s.addr, tx, txs, perTx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	last, _ := parse(t, s.dial(t).do("RL.SLIDING", "hot", "1000000", "60000")).([]any)
	if len(last) != 5 || last[2] != int64(1_000_000-conns*txs*perTx-1) {
		t.Fatalf("after %d decisions: %v", conns*txs*perTx, last)
	}
}

// runTransactions sends tx n times on a connection of its own and checks
// that each EXEC's perTx decisions have consecutive remaining budgets. It
// returns its first failure, for a test goroutine to report.
func runTransactions(addr, tx string, n, perTx int) error {
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(ioTimeout))
	r := bufio.NewReader(conn)
	for range n {
		if _, err := conn.Write([]byte(tx)); err != nil {
			return err
		}
		var replies [perTxMax + 2]strings.Builder
		for i := range perTx + 2 {
			if err := readValue(r, &replies[i]); err != nil {
				return err
			}
		}
		exec := replies[perTx+1].String()
		var got [perTxMax]int64
		fields := strings.Split(exec, "\r\n")
		// *perTx, then per decision: *5 :allowed :limit :remaining :retry :reset
		for i := range perTx {
			if _, err := fmt.Sscanf(fields[1+6*i+3], ":%d", &got[i]); err != nil {
				return fmt.Errorf("EXEC reply %q: %v", exec, err)
			}
			if i > 0 && got[i] != got[i-1]-1 {
				return fmt.Errorf("a transaction's decisions were interleaved: remaining %v", got[:perTx])
			}
		}
	}
	return nil
}

// perTxMax bounds the decisions per transaction runTransactions checks.
const perTxMax = 8

// TestMultiSizeIsBounded checks that a transaction, applied as one request,
// may not queue more than MaxRequestLen bytes of commands: the command that
// would pass it is refused and dooms the transaction, which then holds
// nothing more.
func TestMultiSizeIsBounded(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.Limits.MaxRequestLen = 1000 }))
	c := s.dial(t)
	decision := cmd("RL.SLIDING", "k", "1000", "60000")
	size := len(encode(decision...)) // 46 bytes
	fit := 1000 / size
	c.expect("+OK\r\n", "MULTI")
	for range fit {
		c.expect(wireQueued, decision...)
	}
	c.expect("-ERR the transaction's commands are longer than the 1000 bytes allowed (--max-request-len)\r\n", decision...)
	c.expect(wireQueued, "PING")
	c.expect(wireExecAbort, "EXEC")
	c.expect(":0\r\n", "EXISTS", "k")

	c.expect("+OK\r\n", "MULTI")
	for range fit {
		c.expect(wireQueued, decision...)
	}
	exec, _ := parse(t, c.do("EXEC")).([]any)
	if len(exec) != fit {
		t.Fatalf("EXEC of %d commands: %d replies", fit, len(exec))
	}
}
