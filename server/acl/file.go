package acl

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rlserver/rlserver/commands"
)

// The aclfile (--aclfile) is a subset of Redis's: one user a line,
//
//	user <name> <rule> <rule> ...
//
// with blank lines and lines starting with # ignored. The rules apply in
// order, left to right, to a user that starts off, without password,
// command or key:
//
//	on, off                 may authenticate, or not
//	#<sha256 hex>           a password, by its SHA-256 (64 lower-case hex digits)
//	><password>             a password in clear (hashed when loaded; prefer #)
//	!<hash>, <<password>    removes a password
//	nopass, resetpass       any password works / no password works
//	~<pattern>              keys matching the glob pattern, read and write
//	%R~<pattern>, %W~...    keys, read only / write only (%RW~ is ~)
//	allkeys (~*), resetkeys every key / none
//	+<command>, -<command>  allows / denies a command, a container with all its subcommands
//	+<cmd>|<sub>, -...      one subcommand (+config|get)
//	+@<category>, -@...     every command in the category (ACL CAT lists them)
//	allcommands (+@all), nocommands (-@all)
//	&<pattern>, allchannels, resetchannels, sanitize-payload, skip-sanitize-payload
//	                        accepted for Redis's files; rlserver has no Pub/Sub
//	reset                   back to off, no password, no command, no key
//
// Unknown rules, commands and categories are errors: a typo must not leave a
// user allowed what the file meant to deny. A file that does not declare
// the user "default" leaves it as Redis does: on, nopass, allowed everything.

// Redis's texts for malformed rules (ACLSetUserStringError).
var (
	errRuleSyntax   = errors.New("Syntax error")
	errRuleUnknown  = errors.New("Unknown command or category name in ACL")
	errRuleHash     = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errRuleNoSuch   = errors.New("The password you are trying to remove from the user does not exist")
	errRuleAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errRuleSelector = errors.New("Selectors are not supported by rlserver")
)

// Load reads the users of an aclfile. Its errors name the file and line.
func Load(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads the users of an aclfile from r; name is the file's, for
// errors and CONFIG GET aclfile.
func Parse(r io.Reader, name string) (*Users, error) {
	var users []*User
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] != "user" || len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: should start with user keyword", name, n)
		}
		if line, dup := seen[fields[1]]; dup {
			return nil, fmt.Errorf("%s:%d: Duplicate user '%s' found (first on line %d)", name, n, fields[1], line)
		}
		seen[fields[1]] = n
		u := newUser(fields[1])
		for _, rule := range fields[2:] {
			if err := u.apply(rule); err != nil {
				return nil, fmt.Errorf("%s:%d: %w in rule '%s'", name, n, err, redactRule(rule))
			}
		}
		users = append(users, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return newUsers(users, name), nil
}

// redactRule keeps a clear-text password out of error messages and logs.
func redactRule(rule string) string {
	if strings.HasPrefix(rule, ">") || strings.HasPrefix(rule, "<") {
		return rule[:1] + "<redacted>"
	}
	return rule
}

// apply applies one rule to u.
func (u *User) apply(rule string) error {
	switch strings.ToLower(rule) {
	case "on":
		u.enabled = true
		return nil
	case "off":
		u.enabled = false
		return nil
	case "nopass":
		u.nopass, u.hashes = true, nil
		return nil
	case "resetpass":
		u.nopass, u.hashes = false, nil
		return nil
	case "allkeys", "~*":
		u.allKeys, u.keys = true, nil
		return nil
	case "resetkeys":
		u.allKeys, u.keys = false, nil
		return nil
	case "allchannels", "&*":
		u.allChannels = true
		return nil
	case "resetchannels":
		u.allChannels = false
		return nil
	case "sanitize-payload", "skip-sanitize-payload":
		return nil
	case "allcommands", "+@all":
		u.allowAll(true)
		return nil
	case "nocommands", "-@all":
		u.allowAll(false)
		return nil
	case "reset":
		*u = *newUser(u.name)
		return nil
	}
	switch rule[0] {
	case '>', '<':
		sum := sha256.Sum256([]byte(rule[1:]))
		return u.password(rule[0] == '>', sum)
	case '#', '!':
		var sum [sha256.Size]byte
		if len(rule) != 1+2*sha256.Size || strings.ToLower(rule[1:]) != rule[1:] {
			return errRuleHash
		}
		if _, err := hex.Decode(sum[:], []byte(rule[1:])); err != nil {
			return errRuleHash
		}
		return u.password(rule[0] == '#', sum)
	case '~', '%':
		return u.keyPattern(rule)
	case '&':
		return nil // a channel pattern: no Pub/Sub here
	case '(':
		return errRuleSelector
	case '+', '-':
		return u.commandRule(rule)
	}
	return errRuleSyntax
}

// allowAll allows or denies every command.
func (u *User) allowAll(allow bool) {
	for i := range u.allowed {
		u.allowed[i] = 0
		if allow {
			u.allowed[i] = ^uint64(0)
		}
	}
	u.allCommands = allow
	// Every command rule before it is undone: only this one is worth
	// describing.
	if allow {
		u.rules = []string{"+@all"}
	} else {
		u.rules = []string{"-@all"}
	}
}

// password adds or removes a password by its hash.
func (u *User) password(add bool, sum [sha256.Size]byte) error {
	i := -1
	for j := range u.hashes {
		if u.hashes[j] == sum {
			i = j
		}
	}
	switch {
	case add && i < 0:
		u.hashes = append(u.hashes, sum)
	case !add && i < 0:
		return errRuleNoSuch
	case !add:
		u.hashes = append(u.hashes[:i], u.hashes[i+1:]...)
	}
	if add {
		u.nopass = false
	}
	return nil
}

// keyPattern adds ~pattern, %R~pattern, %W~pattern or %RW~pattern.
func (u *User) keyPattern(rule string) error {
	perm, pattern := keyRead|keyWrite, rule[1:]
	if rule[0] == '%' {
		flags, rest, ok := strings.Cut(rule[1:], "~")
		if !ok || flags == "" {
			return errRuleSyntax
		}
		perm = 0
		for _, f := range strings.ToUpper(flags) {
			switch f {
			case 'R':
				perm |= keyRead
			case 'W':
				perm |= keyWrite
			default:
				return errRuleSyntax
			}
		}
		pattern = rest
	}
	if u.allKeys {
		return errRuleAfterAll
	}
	if pattern == "*" && perm == keyRead|keyWrite {
		u.allKeys, u.keys = true, nil
		return nil
	}
	u.keys = append(u.keys, keyPattern{pattern: []byte(pattern), perm: perm})
	return nil
}

// commandRule applies +name, -name, +@category or -@category.
func (u *User) commandRule(rule string) error {
	allow, name := rule[0] == '+', strings.ToLower(rule[1:])
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if !commands.IsACLCategory(cat) {
			return errRuleUnknown
		}
		for _, s := range commands.Specs() {
			if s.InCategory(cat) {
				u.setCommand(s, allow)
			}
		}
	} else {
		s := commands.LookupRule(name)
		if s == nil {
			return errRuleUnknown
		}
		u.setCommand(s, allow)
	}
	if !allow {
		u.allCommands = false
	}
	u.rules = append(u.rules, rule[:1]+name)
	return nil
}
