// Package acl is rlserver's access control, as Redis 6+ has it: every
// connection acts as a user, at first the user "default"; AUTH and HELLO
// AUTH switch to another. A user is on or off, has passwords (kept as their
// SHA-256) or none ("nopass": any password is accepted), and may run some
// commands on some keys. The users come from an aclfile (Load, file.go), or,
// without one, are the default user alone, with requirepass as its password
// (New).
//
// The users never change once loaded: every node of a cluster, given the
// same file, enforces the same rules, and no command can grant itself more.
package acl

import (
	"crypto/sha256"
	"errors"
	"slices"
)

// Redis's text for a failed authentication.
var errWrongPass = errors.New("WRONGPASS invalid username-password pair or user is disabled.")

// Users is the set of users. It does not change once built.
type Users struct {
	users map[string]*User
	names []string // sorted, for ACL USERS and LIST
	def   *User
	file  string // the aclfile, "" when the users come from requirepass
}

// New returns the users of a server without an aclfile: the default user
// alone, allowed everything, with requirepass as its password, or without a
// password (nopass) when requirepass is empty, as Redis has it.
func New(requirepass string) *Users {
	rules := []string{"on", "nopass", "~*", "&*", "+@all"}
	if requirepass != "" {
		rules[1] = ">" + requirepass
	}
	u := newUser("default")
	for _, r := range rules {
		if err := u.apply(r); err != nil {
			panic(err) // the rules above are valid
		}
	}
	return newUsers([]*User{u}, "")
}

// newUsers builds the set; the default user is added, as Redis creates it,
// when users does not define it.
func newUsers(users []*User, file string) *Users {
	a := &Users{users: make(map[string]*User, len(users)+1), file: file}
	for _, u := range users {
		u.finish()
		a.users[u.name] = u
		a.names = append(a.names, u.name)
	}
	if a.users["default"] == nil {
		d := New("").def
		a.users["default"] = d
		a.names = append(a.names, "default")
	}
	slices.Sort(a.names)
	a.def = a.users["default"]
	return a
}

// Default is the default user, the one every connection starts as.
func (a *Users) Default() *User { return a.def }

// Names are the users' names, sorted.
func (a *Users) Names() []string { return slices.Clone(a.names) }

// Lookup is the user called name, nil for none.
func (a *Users) Lookup(name string) *User { return a.users[name] }

// File is the aclfile the users came from, "" for none.
func (a *Users) File() string { return a.file }

// OpenAccess reports whether a new connection is authenticated at once: the
// default user is on and takes no password.
func (a *Users) OpenAccess() bool { return a.def.enabled && a.def.nopass }

// Authenticate returns the user that name and pass identify, or Redis's
// WRONGPASS error, also for a user that does not exist or is off: the reply
// does not tell which. (The time may: user names are not secrets, as in
// Redis; passwords are, and are compared in constant time.)
func (a *Users) Authenticate(name, pass []byte) (*User, error) {
	u := a.users[string(name)]
	if u == nil || !u.enabled {
		return nil, errWrongPass
	}
	if u.nopass {
		return u, nil
	}
	sum := sha256.Sum256(pass)
	if !u.checkPassword(&sum) {
		return nil, errWrongPass
	}
	return u, nil
}
