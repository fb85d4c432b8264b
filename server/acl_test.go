package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/server/acl"
)

// sha is the aclfile's #<hash> of a password.
func sha(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

// testUsers is an aclfile with a user per role.
var testUsers = fmt.Sprintf(`# roles
user default off
user app on #%s ~* +@ratelimit +@connection -@dangerous
user monitor on #%s ~* +@read +@connection
user admin on >admin-pw ~* +@all
user tenant on >t ~tenant:* %%R~shared:* +@ratelimit +@read
user gone off >gone-pw ~* +@all
user open on nopass ~* +@all -@dangerous
`, sha("app-pw"), sha("mon-pw"))

// withACL starts the server with the users of an aclfile's text.
func withACL(t testing.TB, text string) option {
	users, err := acl.Parse(strings.NewReader(text), "users.acl")
	if err != nil {
		t.Fatal(err)
	}
	return withConfig(func(c *Config) { c.Users = users })
}

// noPerm is the wire text of Redis's NOPERM for a command.
func noPerm(user, cmd string) string {
	return errReply(fmt.Sprintf("NOPERM User %s has no permissions to run the '%s' command", user, cmd))
}

// Each role runs what its rules allow and gets Redis's NOPERM for the rest;
// a wrong password, an unknown user and a disabled one get the same
// WRONGPASS; until a user authenticates, the default user being off, every
// command but AUTH, HELLO, QUIT and RESET is NOAUTH.
func TestACLRoles(t *testing.T) {
	s := startServer(t, withACL(t, testUsers))
	c := s.dial(t)
	c.run([]step{
		{cmd("PING"), wireNoAuth},
		{cmd("ACL", "WHOAMI"), wireNoAuth},
		{cmd("AUTH", "app-pw"), wireWrongPass}, // the default user is off
		{cmd("AUTH", "app", "wrong"), wireWrongPass},
		{cmd("AUTH", "nobody", "app-pw"), wireWrongPass},
		{cmd("AUTH", "gone", "gone-pw"), wireWrongPass},
		{cmd("PING"), wireNoAuth}, // failures leave it unauthenticated

		{cmd("AUTH", "app", "app-pw"), "+OK\r\n"},
		{cmd("RL.SLIDING", "user:ada", "10", "60000"), decision2(1, 10, 9, 0, 100000)},
		{cmd("CL.THROTTLE", "user:bob", "5", "10", "60"), arrayReply(intReply(0), intReply(6), intReply(5), intReply(-1), intReply(6))},
		{cmd("RL.POLICY", "GET", "free"), "$-1\r\n"},
		{cmd("CLIENT", "SETNAME", "api"), "+OK\r\n"},
		{cmd("RL.POLICY", "SET", "free", "SLIDING", "10", "60000"), noPerm("app", "rl.policy|set")},
		{cmd("RL.POLICY", "DEL", "free"), noPerm("app", "rl.policy|del")},
		{cmd("RL.RESET", "user:ada"), noPerm("app", "rl.reset")},
		{cmd("FLUSHALL"), noPerm("app", "flushall")},
		{cmd("CONFIG", "SET", "maxmemory", "1"), noPerm("app", "config|set")},
		{cmd("DEBUG", "CLOCK", "GET"), noPerm("app", "debug|clock")},
		{cmd("GET", "user:ada"), noPerm("app", "get")},
		{cmd("CLIENT", "LIST"), noPerm("app", "client|list")},
		// Unknown subcommands and arity come first, as in Redis.
		{cmd("CONFIG", "NOSUCH"), errReply("ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP.")},
		{cmd("FLUSHALL", "A", "B", "C"), noPerm("app", "flushall")},

		{cmd("AUTH", "monitor", "mon-pw"), "+OK\r\n"},
		{cmd("EXISTS", "user:ada"), intReply(1)},
		{cmd("TYPE", "user:ada"), "+rl.sliding\r\n"},
		{cmd("DBSIZE"), intReply(2)},
		{cmd("RL.SLIDING", "user:ada", "10", "60000"), noPerm("monitor", "rl.sliding")},
		{cmd("DEL", "user:ada"), noPerm("monitor", "del")},
		{cmd("ACL", "WHOAMI"), noPerm("monitor", "acl|whoami")},

		{cmd("AUTH", "tenant", "t"), "+OK\r\n"},
		{cmd("RL.SLIDING", "tenant:1", "10", "60000"), decision2(1, 10, 9, 0, 100000)},
		{cmd("RL.SLIDING", "user:ada", "10", "60000"), errReply("NOPERM No permissions to access a key")},
		{cmd("EXISTS", "shared:x"), intReply(0)},                                                          // read-only pattern
		{cmd("RL.SLIDING", "shared:x", "10", "60000"), errReply("NOPERM No permissions to access a key")}, // a decision writes
		{cmd("EXISTS", "tenant:1", "user:ada"), errReply("NOPERM No permissions to access a key")},

		{cmd("AUTH", "open", "anything"), "+OK\r\n"}, // nopass
		{cmd("ACL", "WHOAMI"), bulkReply("open")},
		{cmd("FLUSHALL"), noPerm("open", "flushall")},

		{cmd("AUTH", "admin", "admin-pw"), "+OK\r\n"},
		{cmd("RL.POLICY", "SET", "free", "SLIDING", "10", "60000"), "+OK\r\n"},
		{cmd("ACL", "WHOAMI"), bulkReply("admin")},
		{cmd("RESET"), "+RESET\r\n"},
		{cmd("PING"), wireNoAuth},
	})
}

// HELLO AUTH authenticates as AUTH does, and CLIENT LIST names the user.
func TestACLHelloAuth(t *testing.T) {
	s := startServer(t, withACL(t, testUsers))
	c := s.dial(t)
	if got := c.do("HELLO", "3", "AUTH", "app", "wrong"); got != wireWrongPass {
		t.Fatalf("HELLO AUTH with a wrong password: %q", got)
	}
	if got := c.do("HELLO", "3", "AUTH", "app", "app-pw"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH app: %q", got)
	}
	admin := s.dial(t)
	admin.expect("+OK\r\n", "AUTH", "admin", "admin-pw")
	list := admin.do("CLIENT", "LIST")
	if !contains(list, " user=app ") || !contains(list, " user=admin ") {
		t.Errorf("CLIENT LIST does not name the users:\n%s", list)
	}
}

// A refused command inside MULTI dooms the transaction, as in Redis, and
// AUTH and HELLO cannot change the user a transaction runs as.
func TestACLInsideMulti(t *testing.T) {
	s := startServer(t, withACL(t, testUsers))
	c := s.dial(t)
	c.run([]step{
		{cmd("AUTH", "app", "app-pw"), "+OK\r\n"},
		{cmd("MULTI"), noPerm("app", "multi")},
	})
	c = s.dial(t)
	c.run([]step{
		{cmd("AUTH", "open", "x"), "+OK\r\n"},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("RL.SLIDING", "k", "10", "60000"), "+QUEUED\r\n"},
		{cmd("FLUSHALL"), noPerm("open", "flushall")},
		{cmd("EXEC"), errReply("EXECABORT Transaction discarded because of previous errors.")},
	})
	// AUTH cannot be queued: a transaction runs as the user who queued it.
	c = s.dial(t)
	c.run([]step{
		{cmd("AUTH", "open", "x"), "+OK\r\n"},
		{cmd("MULTI"), "+OK\r\n"},
		{cmd("AUTH", "admin", "admin-pw"), errReply("ERR Command not allowed inside a transaction")},
		{cmd("HELLO", "3", "AUTH", "admin", "admin-pw"), errReply("ERR Command not allowed inside a transaction")},
		{cmd("EXEC"), errReply("EXECABORT Transaction discarded because of previous errors.")},
		{cmd("ACL", "WHOAMI"), "$4\r\nopen\r\n"},
	})
}

// The read-only ACL subcommands describe the users; those that would change
// them are refused.
func TestACLCommand(t *testing.T) {
	s := startServer(t, withACL(t, testUsers))
	c := s.dial(t)
	c.expect("+OK\r\n", "AUTH", "admin", "admin-pw")
	c.expect(arrayReply(bulkReply("admin"), bulkReply("app"), bulkReply("default"), bulkReply("gone"),
		bulkReply("monitor"), bulkReply("open"), bulkReply("tenant")), "ACL", "USERS")
	list := parse(t, c.do("ACL", "LIST")).([]any)
	want := map[string]bool{
		"user app on #" + sha("app-pw") + " ~* resetchannels -@all +@ratelimit +@connection -@dangerous": true,
		"user default off resetkeys resetchannels -@all":                                                 true,
		"user tenant on #" + sha("t") + " ~tenant:* %R~shared:* resetchannels -@all +@ratelimit +@read":  true,
		"user admin on #" + sha("admin-pw") + " ~* resetchannels +@all":                                  true,
	}
	for _, l := range list {
		delete(want, l.(string))
		if contains(l.(string), "admin-pw") {
			t.Errorf("ACL LIST shows a password in clear: %s", l)
		}
	}
	if len(want) > 0 {
		t.Errorf("ACL LIST %q misses %v", list, want)
	}
	c.expect("$-1\r\n", "ACL", "GETUSER", "nobody")
	got := parse(t, c.do("ACL", "GETUSER", "tenant")).([]any)
	if got[0] != "flags" || got[5] != "-@all +@ratelimit +@read" || got[7] != "~tenant:* %R~shared:*" {
		t.Errorf("ACL GETUSER tenant: %q", got)
	}
	cats := parse(t, c.do("ACL", "CAT")).([]any)
	if len(cats) != 22 || cats[len(cats)-1] != "ratelimit" {
		t.Errorf("ACL CAT: %q", cats)
	}
	ratelimit := c.do("ACL", "CAT", "ratelimit")
	for _, name := range []string{"rl.sliding", "cl.throttle", "rl.policy|get"} {
		if !contains(ratelimit, bulkReply(name)) {
			t.Errorf("ACL CAT ratelimit misses %s: %q", name, ratelimit)
		}
	}
	for _, name := range []string{"rl.policy|set", "rl.reset", "flushall"} {
		if contains(ratelimit, bulkReply(name)) {
			t.Errorf("ACL CAT ratelimit has %s", name)
		}
	}
	c.expect(errReply("ERR Unknown category 'nosuch'"), "ACL", "CAT", "nosuch")
	// Too many arguments, in Redis's words for its subcommands of variable
	// arity.
	c.expect(errReply("ERR unknown subcommand or wrong number of arguments for 'cat'. Try ACL HELP."), "ACL", "cat", "a", "b")
	c.expect(errReply("ERR unknown subcommand or wrong number of arguments for 'GENPASS'. Try ACL HELP."), "ACL", "GENPASS", "1", "2")
	if p := parse(t, c.do("ACL", "GENPASS")).(string); len(p) != 64 {
		t.Errorf("ACL GENPASS: %q", p)
	}
	if p := parse(t, c.do("ACL", "GENPASS", "5")).(string); len(p) != 2 {
		t.Errorf("ACL GENPASS 5: %q", p)
	}
	c.expect(errReply("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"), "ACL", "GENPASS", "0")
	for _, sub := range []string{"SETUSER", "DELUSER", "LOAD", "SAVE"} {
		args := []string{"ACL", sub}
		if sub == "SETUSER" || sub == "DELUSER" {
			args = append(args, "x")
		}
		c.expect(errReply("ERR ACL "+sub+" is not supported: rlserver reads its users from --aclfile (or --requirepass) at start-up; edit the file and restart"), args...)
	}
	c.expect(errReply("ERR unknown subcommand 'NOSUCH'. Try ACL HELP."), "ACL", "NOSUCH")
}

// Without an aclfile the default user is the only one: allowed everything,
// with --requirepass as its password or none.
func TestACLWithoutFile(t *testing.T) {
	s := startServer(t, withPassword("s3cret"))
	c := s.dial(t)
	c.run([]step{
		{cmd("AUTH", "s3cret"), "+OK\r\n"},
		{cmd("ACL", "WHOAMI"), bulkReply("default")},
		{cmd("ACL", "LIST"), arrayReply(bulkReply("user default on #" + sha("s3cret") + " ~* &* +@all"))},
		{cmd("CONFIG", "GET", "aclfile"), arrayReply(bulkReply("aclfile"), bulkReply(""))},
	})
	open := startServer(t).dial(t)
	open.expect(arrayReply(bulkReply("user default on nopass ~* &* +@all")), "ACL", "LIST")
}

// An aclfile that does not declare the default user leaves it as Redis
// creates it: on, no password, allowed everything.
func TestACLFileWithoutDefault(t *testing.T) {
	s := startServer(t, withACL(t, "user app on >pw ~* +@ratelimit +acl|whoami\n"))
	c := s.dial(t)
	c.expect(bulkReply("default"), "ACL", "WHOAMI")
	c.expect(arrayReply(bulkReply("aclfile"), bulkReply("users.acl")), "CONFIG", "GET", "aclfile")
	c.expect("+OK\r\n", "AUTH", "app", "pw")
	c.expect(bulkReply("app"), "ACL", "WHOAMI")
}

// A user restricted to some commands and keys answers a pipeline of
// decisions without allocating, as the default user does.
func TestPipelineAllocationsRestrictedUser(t *testing.T) {
	s := startServer(t, withShards(4), withACL(t, "user default on nopass ~user:* ~t:* +@ratelimit +exists\n"))
	if s.cfg.Users.Default().Unrestricted() {
		t.Fatal("the user is not restricted")
	}
	checkPipelineAllocations(t, s)
}
