package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/commands"
)

// sha is the aclfile's #<hash> of a password.
func sha(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

// The file's errors name the file, the line and the rule, in Redis's words,
// and never show a password in clear.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"user app on +rl.slidng", "users.acl:1: Unknown command or category name in ACL in rule '+rl.slidng'"},
		{"\nuser app on +@nosuch", "users.acl:2: Unknown command or category name in ACL in rule '+@nosuch'"},
		{"user app on +config|nosuch", "users.acl:1: Unknown command or category name in ACL in rule '+config|nosuch'"},
		{"user app #abc", "users.acl:1: The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters in rule '#abc'"},
		{"user app #" + strings.ToUpper(sha("x")), "users.acl:1: The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters in rule '#" + strings.ToUpper(sha("x")) + "'"},
		{"user app <secret", "users.acl:1: The password you are trying to remove from the user does not exist in rule '<<redacted>'"},
		{"user app allkeys ~a:*", "users.acl:1: Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns in rule '~a:*'"},
		{"user app %X~a", "users.acl:1: Syntax error in rule '%X~a'"},
		{"user app (~a +get)", "users.acl:1: Selectors are not supported by rlserver in rule '(~a'"},
		{"user app on maybe", "users.acl:1: Syntax error in rule 'maybe'"},
		{"usr app on", "users.acl:1: should start with user keyword"},
		{"user", "users.acl:1: should start with user keyword"},
		{"user app on\nuser app off", "users.acl:2: Duplicate user 'app' found (first on line 1)"},
	} {
		_, err := Parse(strings.NewReader(tc.text), "users.acl")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.text, err, tc.want)
		}
	}
}

// Rules apply in order, as Redis applies them: a container's rule covers
// its subcommands, a later rule overrides an earlier one, reset starts
// over, and passwords come and go.
func TestRuleOrder(t *testing.T) {
	users, err := Parse(strings.NewReader(
		"user a on >p1 >p2 <p1 ~* +@all -config -@dangerous +config|get +flushall\n"+
			"user b on >p reset\n"+
			"user c on >p nopass\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	a := users.users["a"]
	for _, tc := range []struct {
		cmd  []string
		want bool
	}{
		{[]string{"config", "get", "x"}, true},
		{[]string{"config", "set", "x", "y"}, false},
		{[]string{"flushall"}, true},
		{[]string{"debug", "clock", "get"}, false},
		{[]string{"rl.sliding", "k", "1", "1"}, true},
	} {
		args := make([][]byte, len(tc.cmd))
		for i, s := range tc.cmd {
			args[i] = []byte(s)
		}
		spec := lookupSpec(args[0])
		if got := a.Check(spec, args) == nil; got != tc.want {
			t.Errorf("user a, %v: allowed %v, want %v", tc.cmd, got, tc.want)
		}
	}
	if _, err := users.Authenticate([]byte("a"), []byte("p1")); err == nil {
		t.Error("a removed password still works")
	}
	if u, err := users.Authenticate([]byte("a"), []byte("p2")); err != nil || u != a {
		t.Errorf("AUTH a p2: %v", err)
	}
	if b := users.users["b"]; b.enabled || len(b.hashes) != 0 || b.may(lookupSpec([]byte("ping"))) {
		t.Errorf("reset left %+v", b)
	}
	if _, err := users.Authenticate([]byte("c"), []byte("anything")); err != nil {
		t.Errorf("nopass after a password: %v", err)
	}
}

// The permission check of an allowed command, and the refusal of a key,
// cost no allocation either.
func TestPermissionAllocations(t *testing.T) {
	users, err := Parse(strings.NewReader("user u on nopass ~a:* +@ratelimit\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	u := users.users["u"]
	ok := [][]byte{[]byte("RL.SLIDING"), []byte("a:1"), []byte("10"), []byte("1000")}
	denied := [][]byte{[]byte("RL.SLIDING"), []byte("b:1"), []byte("10"), []byte("1000")}
	spec := lookupSpec(ok[0])
	if n := testing.AllocsPerRun(100, func() {
		if u.Check(spec, ok) != nil || u.Check(spec, denied) != errNoPermKey {
			t.Fatal("wrong answer")
		}
	}); n != 0 {
		t.Errorf("%v allocations per check", n)
	}
}

// lookupSpec is commands.Lookup, for the tests' tables.
func lookupSpec(name []byte) *commands.Spec { return commands.Lookup(name) }
