package acl

import (
	"encoding/hex"
	"strings"
)

// Description is a user as ACL GETUSER shows it.
type Description struct {
	Flags     []string // "on" or "off", then "nopass" for a user without password
	Passwords []string // the passwords' SHA-256, in hex, in the order given
	Commands  string   // the command rules, as ACL LIST shows them
	Keys      string   // the key patterns, as ACL LIST shows them; "" for none
	Channels  string   // "&*" when the user has every channel, else ""
}

// Describe is the user as ACL GETUSER shows it.
func (u *User) Describe() Description {
	d := Description{Flags: []string{"off"}, Commands: u.describeCommands()}
	if u.enabled {
		d.Flags[0] = "on"
	}
	if u.nopass {
		d.Flags = append(d.Flags, "nopass")
	}
	for _, h := range u.hashes {
		d.Passwords = append(d.Passwords, hex.EncodeToString(h[:]))
	}
	if u.allKeys || len(u.keys) > 0 {
		d.Keys = u.describeKeys()
	}
	if u.allChannels {
		d.Channels = "&*"
	}
	return d
}

// String is the user as ACL LIST shows it, in the aclfile's format: flags,
// password hashes, keys, channels, then the command rules. Parsed again, it
// gives the same user.
func (u *User) String() string {
	var b strings.Builder
	b.WriteString("user " + u.name)
	if u.enabled {
		b.WriteString(" on")
	} else {
		b.WriteString(" off")
	}
	if u.nopass {
		b.WriteString(" nopass")
	}
	for _, h := range u.hashes {
		b.WriteString(" #" + hex.EncodeToString(h[:]))
	}
	b.WriteString(" " + u.describeKeys())
	if u.allChannels {
		b.WriteString(" &*")
	} else {
		b.WriteString(" resetchannels")
	}
	b.WriteString(" " + u.describeCommands())
	return b.String()
}

// describeKeys is the user's key patterns, "resetkeys" for none.
func (u *User) describeKeys() string {
	if u.allKeys {
		return "~*"
	}
	if len(u.keys) == 0 {
		return "resetkeys"
	}
	parts := make([]string, len(u.keys))
	for i, p := range u.keys {
		prefix := "~"
		switch p.perm {
		case keyRead:
			prefix = "%R~"
		case keyWrite:
			prefix = "%W~"
		}
		parts[i] = prefix + string(p.pattern)
	}
	return strings.Join(parts, " ")
}

// describeCommands is the user's command rules as given, from nothing
// (-@all) or everything (+@all).
func (u *User) describeCommands() string {
	rules := u.rules
	if len(rules) == 0 || (rules[0] != "+@all" && rules[0] != "-@all") {
		rules = append([]string{"-@all"}, rules...)
	}
	return strings.Join(rules, " ")
}
