package server

import (
	"strconv"
	"strings"
	"testing"
)

// helloReply is the wire text of HELLO's reply for connection id: a map in
// RESP3, the same pairs as a flat array in RESP2.
func helloReply(resp3 bool, id int64) string {
	head, proto := "*14\r\n", intReply(2)
	if resp3 {
		head, proto = "%7\r\n", intReply(3)
	}
	return head + bulkReply("server") + bulkReply("rlserver") + bulkReply("version") + bulkReply(RedisVersion) +
		bulkReply("proto") + proto + bulkReply("id") + intReply(id) + bulkReply("mode") + bulkReply("standalone") +
		bulkReply("role") + bulkReply("master") + bulkReply("modules") + "*0\r\n"
}

// clientID asks the connection for its id.
func (c *rawConn) clientID() int64 {
	c.t.Helper()
	reply := c.do("CLIENT", "ID")
	id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
	if err != nil {
		c.t.Fatalf("CLIENT ID: %q", reply)
	}
	return id
}

// TestHello checks HELLO's versions, errors and reply shapes, and that the
// protocol it picks applies to the replies that follow.
func TestHello(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	id := c.clientID()
	c.run([]step{
		{cmd("HELLO"), helloReply(false, id)},
		{cmd("HELLO", "2"), helloReply(false, id)},
		{cmd("HELLO", "4"), "-NOPROTO unsupported protocol version\r\n"},
		{cmd("HELLO", "1"), "-NOPROTO unsupported protocol version\r\n"},
		{cmd("HELLO", "three"), "-ERR Protocol version is not an integer or out of range\r\n"},
		{cmd("HELLO", "03"), "-ERR Protocol version is not an integer or out of range\r\n"},
		{cmd("HELLO", "3", "SETNAME"), "-ERR Syntax error in HELLO option 'SETNAME'\r\n"},
		{cmd("HELLO", "3", "AUTH", "default"), "-ERR Syntax error in HELLO option 'AUTH'\r\n"},
		{cmd("HELLO", "3", "LIB", "x"), "-ERR Syntax error in HELLO option 'LIB'\r\n"},
		{cmd("CLIENT", "GETNAME"), "$-1\r\n"}, // the failed HELLOs left RESP2
		{cmd("hello", "3"), helloReply(true, id)},
		{cmd("HELLO"), helloReply(true, id)},
		{cmd("CLIENT", "GETNAME"), "_\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), decision3(1, 10, 9, 0, 2000)},
		{cmd("CL.THROTTLE", "t", "1", "2", "60"), arrayReply(intReply(0), intReply(2), intReply(1), intReply(-1), intReply(30))},
		{cmd("HELLO", "2"), helloReply(false, id)},
		{cmd("RL.SLIDING", "k", "10", "1000"), decision2(1, 10, 8, 0, 2000)},
		{cmd("CL.THROTTLE", "t", "1", "2", "60"), arrayReply(intReply(0), intReply(2), intReply(0), intReply(-1), intReply(60))},
	})
}

// TestDecisionMapsInRESP3 checks every RL.* decision command after HELLO 3:
// a map of the five names, where RESP2 has an array of five integers.
func TestDecisionMapsInRESP3(t *testing.T) {
	s := startServer(t)
	commands := [][]string{
		cmd("RL.SLIDING", "a", "10", "1000"),
		cmd("RL.FIXED", "b", "10", "1000"),
		cmd("RL.LOG", "c", "10", "1000"),
		cmd("RL.TOKEN", "d", "10", "1", "100"),
		cmd("RL.LEAKY", "e", "10", "1", "100"),
		cmd("RL.GCRA", "f", "9", "10", "1000"),
	}
	resp2, resp3 := s.dial(t), s.dial(t)
	resp3.expect(helloReply(true, resp3.clientID()), "HELLO", "3")
	for _, args := range commands {
		array, ok := parse(t, resp2.do(append(args, "COST", "0")...)).([]any)
		if !ok || len(array) != 5 {
			t.Fatalf("%q in RESP2: %#v", args, array)
		}
		m, ok := parse(t, resp3.do(append(args, "COST", "0")...)).(respMap)
		if !ok {
			t.Fatalf("%q in RESP3: %#v", args, m)
		}
		for i, name := range []string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"} {
			if m[2*i] != name || m[2*i+1] != array[i] {
				t.Fatalf("%q: RESP3 %v, RESP2 %v", args, m, array)
			}
		}
	}
}

// TestClientNames checks CLIENT SETNAME and GETNAME, and the names Redis
// refuses.
func TestClientNames(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	const badName = "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
	c.run([]step{
		{cmd("CLIENT", "GETNAME"), "$-1\r\n"},
		{cmd("CLIENT", "SETNAME", "worker-1"), "+OK\r\n"},
		{cmd("client", "getname"), bulkReply("worker-1")},
		{cmd("CLIENT", "SETNAME", "two words"), badName},
		{cmd("CLIENT", "SETNAME", "line\nbreak"), badName},
		{cmd("CLIENT", "SETNAME", "bell\x07"), badName},
		{cmd("CLIENT", "SETNAME", "café"), badName},
		{cmd("CLIENT", "GETNAME"), bulkReply("worker-1")}, // refusals change nothing
		{cmd("CLIENT", "SETNAME", ""), "+OK\r\n"},         // an empty name clears it
		{cmd("CLIENT", "GETNAME"), "$-1\r\n"},
		{cmd("CLIENT", "SETNAME"), "-ERR wrong number of arguments for 'client|setname' command\r\n"},
		{cmd("CLIENT", "SETNAME", "a", "b"), "-ERR wrong number of arguments for 'client|setname' command\r\n"},
		{cmd("CLIENT"), "-ERR wrong number of arguments for 'client' command\r\n"},
	})
}

// TestClientSubcommands checks the CLIENT subcommands client libraries send
// on connect, and the errors of unknown ones.
func TestClientSubcommands(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.run([]step{
		{cmd("CLIENT", "SETINFO", "LIB-NAME", "go-redis(rl,go1.26)"), "+OK\r\n"},
		{cmd("client", "setinfo", "lib-ver", "9.23.0"), "+OK\r\n"},
		{cmd("CLIENT", "SETINFO", "LIB-NAME", "a b"), "-ERR LIB-NAME cannot contain spaces, newlines or special characters.\r\n"},
		{cmd("CLIENT", "SETINFO", "LIB-VER", "\x01"), "-ERR LIB-VER cannot contain spaces, newlines or special characters.\r\n"},
		{cmd("CLIENT", "SETINFO", "LIB-COLOR", "a b"), "-ERR Unrecognized option 'LIB-COLOR'\r\n"},
		{cmd("CLIENT", "SETINFO", "LIB-NAME"), "-ERR wrong number of arguments for 'client|setinfo' command\r\n"},
		{cmd("CLIENT", "TRACKING", "ON", "OPTIN"), "-ERR Client tracking is currently not supported for RESP2. Please use RESP3.\r\n"},
		{cmd("CLIENT", "TRACKING", "off"), "+OK\r\n"},
		{cmd("CLIENT", "TRACKING", "maybe"), "-ERR syntax error\r\n"},
		{cmd("CLIENT", "TRACKING"), "-ERR wrong number of arguments for 'client|tracking' command\r\n"},
		{cmd("CLIENT", "NO-EVICT", "on"), "+OK\r\n"},
		{cmd("CLIENT", "NO-TOUCH", "off"), "+OK\r\n"},
		{cmd("CLIENT", "MAINT_NOTIFICATIONS", "on", "moving-endpoint-type", "internal-ip"),
			"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n"},
		{cmd("client", "maint_notifications", "on"), "-ERR unknown subcommand 'maint_notifications'. Try CLIENT HELP.\r\n"},
		{cmd("CLIENT", "KILL", "ID", "1"), "-ERR unknown subcommand 'KILL'. Try CLIENT HELP.\r\n"},
		{cmd("CLIENT", "ID", "extra"), "-ERR wrong number of arguments for 'client|id' command\r\n"},
	})
	help, ok := parse(t, c.do("CLIENT", "HELP")).([]any)
	if !ok || len(help) < 3 || help[0] != "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" || help[1] != "SETNAME" {
		t.Fatalf("CLIENT HELP: %q", help)
	}
}

// TestClientInfoAndList checks that CLIENT INFO and LIST describe the
// connections with their ids, names and libraries.
func TestClientInfoAndList(t *testing.T) {
	s := startServer(t)
	a, b := s.dial(t), s.dial(t)
	a.expect("+OK\r\n", "CLIENT", "SETNAME", "alpha")
	a.expect("+OK\r\n", "CLIENT", "SETINFO", "LIB-NAME", "redis-py")
	a.expect("+OK\r\n", "CLIENT", "SETINFO", "LIB-VER", "4.3.4")
	b.expect(helloReply(true, b.clientID()), "HELLO", "3")
	b.expect("+OK\r\n", "CLIENT", "SETNAME", "beta")
	idA, idB := a.clientID(), b.clientID()

	info, _ := parse(t, a.do("CLIENT", "INFO")).(string)
	for _, want := range []string{"id=" + strconv.FormatInt(idA, 10) + " ", " name=alpha ", " lib-name=redis-py ", " lib-ver=4.3.4\n", " resp=2 ", " db=0 ", " cmd=client"} {
		if !strings.Contains(info, want) {
			t.Fatalf("CLIENT INFO %q lacks %q", info, want)
		}
	}
	if !strings.HasPrefix(info, "id=") || strings.Count(info, "\n") != 1 || !strings.HasSuffix(info, "\n") {
		t.Fatalf("CLIENT INFO is not one line: %q", info)
	}

	list, _ := parse(t, a.do("CLIENT", "LIST")).(string)
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "id="+strconv.FormatInt(idA, 10)+" ") ||
		!strings.HasPrefix(lines[1], "id="+strconv.FormatInt(idB, 10)+" ") {
		t.Fatalf("CLIENT LIST, in id order: %q", list)
	}
	if !strings.Contains(lines[0], " name=alpha ") || !strings.Contains(lines[0], " lib-name=redis-py ") ||
		!strings.Contains(lines[1], " name=beta ") || !strings.Contains(lines[1], " resp=3 ") {
		t.Fatalf("CLIENT LIST: %q", list)
	}
	if got := a.do("CLIENT", "LIST", "TYPE", "normal"); parse(t, got) != list {
		t.Fatalf("CLIENT LIST TYPE normal: %q", got)
	}
	a.run([]step{
		{cmd("CLIENT", "LIST", "TYPE", "pubsub"), "$0\r\n\r\n"},
		{cmd("CLIENT", "LIST", "TYPE", "bogus"), "-ERR Unknown client type 'bogus'\r\n"},
		{cmd("CLIENT", "LIST", "ID"), "-ERR syntax error\r\n"},
	})
}

// TestSelect checks that database 0, the only one, can be selected.
func TestSelect(t *testing.T) {
	s := startServer(t)
	s.dial(t).run([]step{
		{cmd("SELECT", "0"), "+OK\r\n"},
		{cmd("SELECT", "1"), "-ERR DB index is out of range\r\n"},
		{cmd("SELECT", "-1"), "-ERR DB index is out of range\r\n"},
		{cmd("SELECT", "zero"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("SELECT"), "-ERR wrong number of arguments for 'select' command\r\n"},
	})
}

// TestPingEcho checks PING and ECHO, and the unknown-command error.
func TestPingEcho(t *testing.T) {
	s := startServer(t)
	s.dial(t).run([]step{
		{cmd("PING"), "+PONG\r\n"},
		{cmd("ping", "hello world"), bulkReply("hello world")},
		{cmd("PING", "a", "b"), "-ERR wrong number of arguments for 'ping' command\r\n"},
		{cmd("ECHO", ""), "$0\r\n\r\n"},
		{cmd("ECHO", "a\r\nb"), bulkReply("a\r\nb")},
		{cmd("READONLY"), "+OK\r\n"},
		{cmd("READWRITE"), "+OK\r\n"},
		{cmd("ZADD", "k", "v"), "-ERR unknown command 'ZADD', with args beginning with: 'k' 'v' \r\n"},
	})
}

// TestQuit checks that QUIT answers OK, after the replies before it, and
// closes the connection without running what follows it.
func TestQuit(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.write(encode("RL.SLIDING", "k", "10", "1000") + "PING\r\nQUIT\r\n" + encode("RL.SLIDING", "k", "10", "1000"))
	want := decision2(1, 10, 9, 0, 2000) + "+PONG\r\n+OK\r\n"
	if got := c.read() + c.read() + c.read(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	c.expectClosed()
	// The command after QUIT was not run.
	s.dial(t).expect(decision2(1, 10, 8, 0, 2000), "RL.SLIDING", "k", "10", "1000")
}

// TestReset checks that RESET returns the connection to its first state:
// RESP2, no name, no transaction.
func TestReset(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect(helloReply(true, c.clientID()), "HELLO", "3")
	c.run([]step{
		{cmd("CLIENT", "SETNAME", "x"), "+OK\r\n"},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), "+QUEUED\r\n"},
		{cmd("RESET"), "+RESET\r\n"},
		{cmd("CLIENT", "GETNAME"), "$-1\r\n"},
		{cmd("EXEC"), "-ERR EXEC without MULTI\r\n"},
		{cmd("RL.SLIDING", "k", "10", "1000"), decision2(1, 10, 9, 0, 2000)}, // the queued one never ran
		{cmd("RESET", "now"), "-ERR wrong number of arguments for 'reset' command\r\n"},
	})
}

// TestKeyTooLong checks that a key above MaxKeyLen is refused with an
// error, changes nothing, and leaves the connection usable.
func TestKeyTooLong(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	long := strings.Repeat("k", testLimits.MaxKeyLen+1)
	refused := "-ERR key is 129 bytes long, longer than the 128 bytes allowed (--max-key-len)\r\n"
	c.run([]step{
		{cmd("RL.SLIDING", strings.Repeat("k", testLimits.MaxKeyLen), "10", "1000"), decision2(1, 10, 9, 0, 2000)},
		{cmd("RL.SLIDING", long, "10", "1000"), refused},
		{cmd("RL.SLIDING", "a", "10", "1000"), decision2(1, 10, 9, 0, 2000)},
		{cmd("DEL", "a", long), refused}, // all or nothing: a stays
		{cmd("EXISTS", "a"), ":1\r\n"},
		{cmd("TYPE", long), refused},
		{cmd("DBSIZE"), ":2\r\n"},
		{cmd("PING"), "+PONG\r\n"},
	})
}
