package commands

import "strings"

// ACL rules name commands ("config", "config|get") and categories
// ("@read"). A user's permissions are a bitmap over every command and
// subcommand, indexed by Spec.Index, so that checking one costs a shift.

// aclCategories are the categories rules may name: Redis 7's, so that rules
// written for Redis load (a category without rlserver commands is empty),
// then rlserver's own, ratelimit.
var aclCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog",
	"geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
	"transaction", "scripting", "ratelimit",
}

// ACLCategories returns the category names, without "@", in ACL CAT's order.
func ACLCategories() []string { return aclCategories }

// IsACLCategory reports whether name (without "@", any case) is a category.
func IsACLCategory(name string) bool {
	for _, c := range aclCategories {
		if strings.EqualFold(c, name) {
			return true
		}
	}
	return false
}

// InCategory reports whether s is in the category cat (without "@", any
// case).
func (s *Spec) InCategory(cat string) bool {
	for _, c := range s.Categories {
		if strings.EqualFold(c[1:], cat) {
			return true
		}
	}
	return false
}

// specs is every command and subcommand, by Index: each command followed by
// its subcommands, in the table's order.
var specs = func() []*Spec {
	var all []*Spec
	for _, s := range table {
		s.Index = len(all)
		all = append(all, s)
		for _, sub := range s.Sub {
			sub.Index = len(all)
			all = append(all, sub)
		}
	}
	return all
}()

// Specs returns every command and subcommand, in Index order.
func Specs() []*Spec { return specs }

// LookupRule returns the command or subcommand a rule names: "name" or
// "parent|sub", any case; nil if there is none.
func LookupRule(name string) *Spec {
	parent, sub, isSub := strings.Cut(strings.ToLower(name), "|")
	s := byName[parent]
	if s == nil || !isSub {
		return s
	}
	for _, c := range s.Sub {
		if c.Name == parent+"|"+sub {
			return c
		}
	}
	return nil
}
