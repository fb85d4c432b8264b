package server

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/commands"
)

// commandEntry is a decoded Redis 7 COMMAND entry.
type commandEntry struct {
	name                  string
	arity                 int64
	flags                 []any
	first, last, step     int64
	categories, tips      []any
	keySpecs, subcommands []any
}

// decodeEntry checks that v is a COMMAND entry of 10 fields and decodes it;
// resp3 says whether its flags and categories must be sets.
func decodeEntry(t *testing.T, v any, resp3 bool) commandEntry {
	t.Helper()
	f, ok := v.([]any)
	if !ok || len(f) != 10 {
		t.Fatalf("COMMAND entry of %d fields, want 10: %#v", len(f), v)
	}
	set := func(v any) []any {
		if s, ok := v.(respSet); ok && resp3 {
			return s
		}
		if a, ok := v.([]any); ok && !resp3 {
			return a
		}
		t.Fatalf("%s: %#v is not a %s", f[0], v, map[bool]string{false: "RESP2 array", true: "RESP3 set"}[resp3])
		return nil
	}
	e := commandEntry{name: f[0].(string), arity: f[1].(int64), flags: set(f[2]),
		first: f[3].(int64), last: f[4].(int64), step: f[5].(int64), categories: set(f[6])}
	e.tips, _ = f[7].([]any)
	e.keySpecs, _ = f[8].([]any)
	e.subcommands, _ = f[9].([]any)
	return e
}

// TestCommand checks COMMAND's entries in both protocols: 10 fields each,
// lower-case names, and the key positions cluster clients route by.
func TestCommand(t *testing.T) {
	s := startServer(t)
	for _, resp3 := range []bool{false, true} {
		c := s.dial(t)
		if resp3 {
			c.expect(helloReply(true, c.clientID()), "HELLO", "3")
		}
		all, ok := parse(t, c.do("COMMAND")).([]any)
		if !ok || len(all) != len(commands.All()) {
			t.Fatalf("COMMAND: %d entries, want %d", len(all), len(commands.All()))
		}
		entries := map[string]commandEntry{}
		for _, v := range all {
			e := decodeEntry(t, v, resp3)
			if e.name != strings.ToLower(e.name) {
				t.Errorf("name %q is not lower case", e.name)
			}
			for _, sub := range e.subcommands {
				if se := decodeEntry(t, sub, resp3); !strings.HasPrefix(se.name, e.name+"|") {
					t.Errorf("subcommand %q of %q", se.name, e.name)
				}
			}
			entries[e.name] = e
		}
		keys := []struct {
			name                     string
			arity, first, last, step int64
		}{
			{"rl.sliding", -4, 1, 1, 1},
			{"cl.throttle", -5, 1, 1, 1},
			{"del", -2, 1, -1, 1},
			{"exists", -2, 1, -1, 1},
			{"type", 2, 1, 1, 1},
			{"ping", -1, 0, 0, 0},
		}
		for _, k := range keys {
			e, ok := entries[k.name]
			if !ok {
				t.Fatalf("COMMAND lacks %s", k.name)
			}
			if e.arity != k.arity || e.first != k.first || e.last != k.last || e.step != k.step {
				t.Errorf("%s: arity %d keys %d,%d,%d; want %d keys %d,%d,%d",
					k.name, e.arity, e.first, e.last, e.step, k.arity, k.first, k.last, k.step)
			}
			if wantSpecs := min(k.first, 1); int64(len(e.keySpecs)) != wantSpecs {
				t.Errorf("%s: %d key specs", k.name, len(e.keySpecs))
			}
		}
		if n := len(entries["client"].subcommands); n == 0 {
			t.Error("client has no subcommands")
		}
	}
}

// TestCommandDelKeySpec checks a key specification word for word, as
// redis-py and go-redis read it.
func TestCommandDelKeySpec(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	want := arrayReply(arrayReply(bulkReply("del"), intReply(-2), arrayReply("+write\r\n"), intReply(1), intReply(-1), intReply(1),
		arrayReply("+@keyspace\r\n", "+@write\r\n", "+@slow\r\n"), "*0\r\n",
		arrayReply(arrayReply(
			bulkReply("flags"), arrayReply("+RM\r\n", "+DELETE\r\n"),
			bulkReply("begin_search"), arrayReply(bulkReply("type"), bulkReply("index"), bulkReply("spec"), arrayReply(bulkReply("index"), intReply(1))),
			bulkReply("find_keys"), arrayReply(bulkReply("type"), bulkReply("range"), bulkReply("spec"),
				arrayReply(bulkReply("lastkey"), intReply(-1), bulkReply("keystep"), intReply(1), bulkReply("limit"), intReply(0))))),
		"*0\r\n"))
	c.expect(want, "COMMAND", "INFO", "del")
}

// TestCommandSubcommands checks COMMAND COUNT, INFO, DOCS, LIST and GETKEYS,
// and their errors, in both protocols where the shape differs.
func TestCommandSubcommands(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	n := int64(len(commands.All()))
	c.run([]step{
		{cmd("COMMAND", "COUNT"), intReply(n)},
		{cmd("command", "getkeys", "RL.SLIDING", "user:ada", "10", "1000"), arrayReply(bulkReply("user:ada"))},
		{cmd("COMMAND", "GETKEYS", "del", "a", "b", "c"), arrayReply(bulkReply("a"), bulkReply("b"), bulkReply("c"))},
		{cmd("COMMAND", "GETKEYS", "PING"), "-ERR The command has no key arguments\r\n"},
		{cmd("COMMAND", "GETKEYS", "NOSUCH", "k"), "-ERR Invalid command specified\r\n"},
		{cmd("COMMAND", "GETKEYS", "RL.SLIDING", "k"), "-ERR Invalid number of arguments specified for command\r\n"},
		{cmd("COMMAND", "GETKEYS"), "-ERR wrong number of arguments for 'command|getkeys' command\r\n"},
		{cmd("COMMAND", "COUNT", "x"), "-ERR wrong number of arguments for 'command|count' command\r\n"},
		{cmd("COMMAND", "FOO"), "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n"},
		{cmd("COMMAND", "DOCS", "nosuch"), "*0\r\n"},
	})

	// COMMAND INFO: an entry per name, a null for an unknown one ($-1 in
	// RESP2, as Redis's addReplyNull).
	info := c.do("COMMAND", "INFO", "rl.sliding", "nosuch")
	if !strings.HasPrefix(info, "*2\r\n*10\r\n$10\r\nrl.sliding\r\n") || !strings.HasSuffix(info, "*0\r\n$-1\r\n") {
		t.Fatalf("COMMAND INFO rl.sliding nosuch: %q", info)
	}
	if all, _ := parse(t, c.do("COMMAND", "INFO")).([]any); int64(len(all)) != n {
		t.Fatalf("COMMAND INFO without names: %d entries", len(all))
	}
	list, _ := parse(t, c.do("COMMAND", "LIST")).([]any)
	if int64(len(list)) != n || list[0] != "rl.sliding" {
		t.Fatalf("COMMAND LIST: %v", list)
	}

	docs2, _ := parse(t, c.do("COMMAND", "DOCS", "rl.sliding")).([]any)
	if len(docs2) != 2 || docs2[0] != "rl.sliding" {
		t.Fatalf("COMMAND DOCS in RESP2: %#v", docs2)
	}
	if doc, _ := docs2[1].([]any); field(doc, "group") != "ratelimit" || field(doc, "arguments") == nil {
		t.Fatalf("COMMAND DOCS rl.sliding: %#v", docs2[1])
	}

	c.expect(helloReply(true, c.clientID()), "HELLO", "3")
	docs3, _ := parse(t, c.do("COMMAND", "DOCS", "rl.sliding", "client")).(respMap)
	if len(docs3) != 4 || docs3[0] != "rl.sliding" || docs3[2] != "client" {
		t.Fatalf("COMMAND DOCS in RESP3: %#v", docs3)
	}
	clientDoc, _ := docs3[3].(respMap)
	if subs, _ := field(clientDoc, "subcommands").(respMap); field(subs, "client|setname") == nil {
		t.Fatalf("COMMAND DOCS client: %#v", clientDoc)
	}
	if got := c.do("COMMAND", "INFO", "nosuch"); got != "*1\r\n_\r\n" {
		t.Fatalf("COMMAND INFO nosuch in RESP3: %q", got)
	}
	c.expect("%0\r\n", "COMMAND", "DOCS", "nosuch")
}

// TestConfig checks the CONFIG GET answers benchmark tools need, and that
// CONFIG SET is refused.
func TestConfig(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.MaxClients = 7 }))
	c := s.dial(t)
	c.run([]step{
		{cmd("CONFIG", "GET", "save"), arrayReply(bulkReply("save"), bulkReply(""))},
		{cmd("config", "get", "appendonly"), arrayReply(bulkReply("appendonly"), bulkReply("no"))},
		{cmd("CONFIG", "GET", "nosuch"), "*0\r\n"},
		{cmd("CONFIG", "GET", "APPENDONLY", "save"), arrayReply(bulkReply("appendonly"), bulkReply("no"), bulkReply("save"), bulkReply(""))},
		{cmd("CONFIG", "GET", "maxc*"), arrayReply(bulkReply("maxclients"), bulkReply("7"))},
		{cmd("CONFIG", "GET", "proto-max-bulk-len"), arrayReply(bulkReply("proto-max-bulk-len"), bulkReply("4096"))},
		{cmd("CONFIG", "GET"), "-ERR wrong number of arguments for 'config|get' command\r\n"},
		{cmd("CONFIG", "SET", "maxclients", "10"), "-ERR Unsupported CONFIG parameter: maxclients (rlserver is configured at start-up, except maxmemory and maxmemory-policy)\r\n"},
		{cmd("CONFIG", "REWRITE"), "-ERR unknown subcommand 'REWRITE'. Try CONFIG HELP.\r\n"},
		{cmd("CONFIG", "RESETSTAT"), "+OK\r\n"},
	})
	port := s.addr[strings.LastIndexByte(s.addr, ':')+1:]
	c.expect(arrayReply(bulkReply("port"), bulkReply(port)), "CONFIG", "GET", "port")
	c.expect(helloReply(true, c.clientID()), "HELLO", "3")
	c.expect("%1\r\n"+bulkReply("save")+bulkReply(""), "CONFIG", "GET", "save")
}

// TestCluster checks CLUSTER on a node without cluster support: Redis's
// refusal, word for word (rueidis looks for "CLUSTER" in it), and KEYSLOT.
func TestCluster(t *testing.T) {
	s := startServer(t)
	const disabled = "-ERR This instance has cluster support disabled\r\n"
	s.dial(t).run([]step{
		{cmd("CLUSTER", "SLOTS"), disabled},
		{cmd("cluster", "shards"), disabled},
		{cmd("CLUSTER", "NODES"), disabled},
		{cmd("CLUSTER", "INFO"), disabled},
		{cmd("CLUSTER", "MYID"), disabled},
		{cmd("CLUSTER", "KEYSLOT", "user:ada"), ":12861\r\n"},
		{cmd("CLUSTER", "KEYSLOT", "123456789"), intReply(0x31C3)},
		{cmd("CLUSTER", "KEYSLOT", "foo{bar}{zap}"), intReply(5061)}, // the slot of "bar"
		{cmd("CLUSTER", "KEYSLOT", "bar"), intReply(5061)},
		{cmd("CLUSTER", "KEYSLOT"), "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"},
		{cmd("CLUSTER", "MEET", "a", "1"), "-ERR unknown subcommand 'MEET'. Try CLUSTER HELP.\r\n"},
	})
}

// TestInfo checks INFO's sections and the lines clients wait on.
func TestInfo(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	all, _ := parse(t, c.do("INFO")).(string)
	for _, want := range []string{"# Server\r\n", "redis_version:7.4.0\r\n", "rlserver_version:test\r\n", "redis_mode:standalone\r\n",
		"# Clients\r\nconnected_clients:1\r\n", "# Persistence\r\nloading:0\r\n", "# Replication\r\nrole:master\r\n",
		"# Cluster\r\ncluster_enabled:0\r\n", "# Keyspace\r\n", "rl_shards:4\r\n"} {
		if !strings.Contains(all, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	if order := sectionOrder(all); strings.Join(order, ",") != "Server,Clients,Memory,Persistence,Stats,Replication,Cpu,Ratelimit,Policies,Shares,Federation,Reservations,Topkeys,Scripting,Raft,Cluster,Keyspace" {
		t.Errorf("INFO sections: %v", order)
	}
	for _, section := range []string{"default", "all", "everything"} {
		if got := sectionOrder(parse(t, c.do("INFO", section)).(string)); len(got) != 17 {
			t.Errorf("INFO %s: sections %v", section, got)
		}
	}

	server, _ := parse(t, c.do("info", "SERVER")).(string)
	port := s.addr[strings.LastIndexByte(s.addr, ':')+1:]
	if !strings.HasPrefix(server, "# Server\r\n") || !strings.Contains(server, "\r\ntcp_port:"+port+"\r\n") ||
		!strings.Contains(server, "\r\nserver_time_usec:"+strconv.FormatInt(testNow*1000, 10)+"\r\n") || strings.Contains(server, "# Clients") {
		t.Errorf("INFO server: %q", server)
	}
	if got := sectionOrder(parse(t, c.do("INFO", "cluster", "server")).(string)); strings.Join(got, ",") != "Server,Cluster" {
		t.Errorf("INFO cluster server: sections %v", got)
	}
	c.run([]step{
		{cmd("INFO", "nosuch"), "$0\r\n\r\n"},
		{cmd("INFO", "keyspace"), bulkReply("# Keyspace\r\n")},
		{cmd("RL.SLIDING", "a", "10", "1000"), decision2(1, 10, 9, 0, 2000)},
		{cmd("RL.FIXED", "b", "1", "1000"), decision2(1, 1, 0, 0, 1000)},
		{cmd("RL.FIXED", "b", "1", "1000"), decision2(0, 1, 0, 1000, 1000)},
		{cmd("INFO", "keyspace"), bulkReply("# Keyspace\r\ndb0:keys=2,expires=2,avg_ttl=0\r\n")},
	})
	rl, _ := parse(t, c.do("INFO", "ratelimit")).(string)
	for _, want := range []string{"rl_decisions_allowed:2\r\n", "rl_decisions_denied:1\r\n", "rl_keys:2\r\n", "rl_clock_ms:" + strconv.FormatInt(testNow, 10) + "\r\n"} {
		if !strings.Contains(rl, want) {
			t.Errorf("INFO ratelimit %q lacks %q", rl, want)
		}
	}
}

// TestInfoMemory checks that INFO memory reports the process's real resident
// set (what a container limit is set on) and the heap's division, in figures
// that agree with each other.
func TestInfoMemory(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	mem, _ := parse(t, c.do("INFO", "memory")).(string)
	field := func(name string) float64 {
		for _, line := range strings.Split(mem, "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return f
			}
		}
		t.Fatalf("INFO memory lacks %s: %q", name, mem)
		return 0
	}
	rss, heap, live, goal := field("used_memory_rss"), field("used_memory"), field("rl_heap_live"), field("rl_heap_goal")
	if rss < heap || heap <= 0 || live < 0 || goal < live || rss > 1<<40 { // live: 0 before a first collection
		t.Errorf("used_memory_rss %.0f, used_memory %.0f, rl_heap_live %.0f, rl_heap_goal %.0f", rss, heap, live, goal)
	}
	if own := residentBytes(); runtime.GOOS == "linux" && (own == 0 || math.Abs(float64(own)-rss) > rss/2) {
		t.Errorf("VmRSS %d, INFO said %.0f", own, rss)
	}
	for _, name := range []string{"mem_fragmentation_ratio", "rl_heap_free", "rl_heap_released", "rl_gc_percent", "rl_gc_cycles",
		"used_memory_scripts_eval", "number_of_cached_scripts", "used_memory_scripts"} {
		if field(name) < 0 {
			t.Errorf("%s is negative", name)
		}
	}
	// The scripts' figures, which Redis 7 gives in both sections, agree.
	scripting, _ := parse(t, c.do("INFO", "scripting")).(string)
	for _, name := range []string{"used_memory_scripts_eval", "number_of_cached_scripts"} {
		if want := fmt.Sprintf("%s:%.0f\r\n", name, field(name)); !strings.Contains(scripting, want) {
			t.Errorf("INFO scripting %q lacks %q", scripting, want)
		}
	}
}

// sectionOrder lists the "# Name" headers of an INFO text, in order.
func sectionOrder(info string) []string {
	var names []string
	for _, line := range strings.Split(info, "\r\n") {
		if name, ok := strings.CutPrefix(line, "# "); ok {
			names = append(names, name)
		}
	}
	return names
}

// TestTime checks that TIME reports the clock decisions use.
func TestTime(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect(arrayReply(bulkReply("1700000000"), bulkReply("0")), "TIME")
	s.clock.Set(testNow + 1_234)
	c.expect(arrayReply(bulkReply("1700000001"), bulkReply("234000")), "TIME")
	c.expect("-ERR wrong number of arguments for 'time' command\r\n", "TIME", "now")
	// On the system's clock TIME has microseconds, as Redis's: of a few
	// readings, not all fall on a millisecond.
	s.clock.Real()
	onMillisecond := 0
	for range 5 {
		reply, _ := parse(t, c.do("TIME")).([]any)
		if micros, _ := reply[1].(string); strings.HasSuffix(micros, "000") {
			onMillisecond++
		}
	}
	if onMillisecond == 5 {
		t.Error("TIME's microseconds are a multiple of 1000 five times running")
	}
}
