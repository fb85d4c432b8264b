package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/rlserver/rlserver/commands"
)

// Checking a command costs nothing for a user allowed everything (the
// default user without an aclfile), and a bit test plus a glob match per key
// for the others: nothing is allocated.

// Redis's text for a key the user may not access (Redis 7.2's
// getAclErrorMessage, non-verbose, as processCommand sends it).
var errNoPermKey = errors.New("NOPERM No permissions to access a key")

// User is one ACL user. It does not change once loaded.
type User struct {
	name    string
	enabled bool
	nopass  bool
	hashes  [][sha256.Size]byte // the passwords' SHA-256, in the order given
	// allowed is a bit per commands.Spec.Index: may the user run it.
	allowed []uint64
	// allCommands: the last rule over every command was +@all (Redis's
	// allcommands flag); ACL LIST says so.
	allCommands bool
	allKeys     bool
	keys        []keyPattern
	allChannels bool // accepted for Redis's files; rlserver has no Pub/Sub
	rules       []string
	// unrestricted: every command, every key, checked once at load.
	unrestricted bool
}

// Key permissions of a pattern, Redis's %R~, %W~ and ~ (both).
const (
	keyRead uint8 = 1 << iota
	keyWrite
)

// keyPattern is one of a user's key patterns.
type keyPattern struct {
	pattern []byte
	perm    uint8 // keyRead, keyWrite or both
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Enabled reports whether the user may authenticate ("on").
func (u *User) Enabled() bool { return u.enabled }

// NoPass reports whether the user takes any password ("nopass").
func (u *User) NoPass() bool { return u.nopass }

// Unrestricted reports whether the user may run every command on every key,
// so that Check need not be asked.
func (u *User) Unrestricted() bool { return u.unrestricted }

// newUser returns a user as Redis creates one: off, no password, no
// command, no key.
func newUser(name string) *User {
	return &User{name: name, allowed: make([]uint64, (len(commands.Specs())+63)/64)}
}

// setCommand allows or denies one command or subcommand (a container: all
// its subcommands with it, as Redis's +config allows CONFIG GET and SET).
func (u *User) setCommand(s *commands.Spec, allow bool) {
	u.setBit(s.Index, allow)
	for _, sub := range s.Sub {
		u.setBit(sub.Index, allow)
	}
}

func (u *User) setBit(i int, allow bool) {
	if allow {
		u.allowed[i/64] |= 1 << (i % 64)
	} else {
		u.allowed[i/64] &^= 1 << (i % 64)
	}
}

// may reports whether the user may run the command or subcommand s.
func (u *User) may(s *commands.Spec) bool {
	return u.allowed[s.Index/64]&(1<<(s.Index%64)) != 0
}

// finish computes what the checks use once the rules are applied.
func (u *User) finish() {
	all := true
	for _, s := range commands.Specs() {
		if !u.may(s) {
			all = false
			break
		}
	}
	u.unrestricted = all && u.allKeys
}

// checkPassword reports whether pass is one of the user's passwords. The
// time taken depends only on how many passwords the user has: every hash
// is compared, in constant time.
func (u *User) checkPassword(sum *[sha256.Size]byte) bool {
	match := 0
	for i := range u.hashes {
		match |= subtle.ConstantTimeCompare(u.hashes[i][:], sum[:])
	}
	return match == 1
}

// Check is nil when the user may run args, whose spec is spec, or the
// NOPERM error to answer, in Redis's words. A container's subcommand is
// checked as itself; one the table does not know passes, to be answered
// "unknown subcommand" (Redis checks that before permissions).
func (u *User) Check(spec *commands.Spec, args [][]byte) error {
	if len(spec.Sub) > 0 {
		sub := spec.Subcommand(args)
		if sub == nil {
			return nil
		}
		spec = sub
	}
	if !u.may(spec) {
		return fmt.Errorf("NOPERM User %s has no permissions to run the '%s' command", u.name, spec.Name)
	}
	if u.allKeys || !spec.HasKeys() {
		return nil
	}
	need := keyAccess(spec)
	denied := false
	spec.Keys(args, func(key []byte) {
		if !denied && !u.mayAccess(key, need) {
			denied = true
		}
	})
	if denied {
		return errNoPermKey
	}
	return nil
}

// keyAccess is the key permission spec needs: deletes write, read-only
// commands read, the others (the decisions) read and write.
func keyAccess(spec *commands.Spec) uint8 {
	switch spec.KeyUse() {
	case commands.KeysDeleted:
		return keyWrite
	case commands.KeysRead:
		return keyRead
	}
	return keyRead | keyWrite
}

// mayAccess reports whether one of the user's patterns grants need on key.
func (u *User) mayAccess(key []byte, need uint8) bool {
	for _, p := range u.keys {
		if p.perm&need == need && commands.Match(p.pattern, key, false) {
			return true
		}
	}
	return false
}
