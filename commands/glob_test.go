package commands

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"user:*", "user:ada", true},
		{"user:*", "usr:ada", false},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "hllo", true},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"h[b-a]llo", "hallo", true},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{"*a*b*c", "xxaxxbxxc", true},
		{"*a*b*c", "xxaxxcxxb", false},
		{"a*", "b", false},
		{"{user:ada}:*", "{user:ada}:sec", true},
		{"[", "[", false},
		{"abc", "abcd", false},
		{"abc*", "abc", true},
	}
	for _, c := range cases {
		if got := Match([]byte(c.pattern), []byte(c.s), false); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
	if !Match([]byte("MaxClients"), []byte("maxclients"), true) || Match([]byte("MaxClients"), []byte("maxclients"), false) {
		t.Error("nocase")
	}
}

func TestMatchIsNotExponential(t *testing.T) {
	// Redis's recursive matcher needed a nesting limit for patterns like this.
	pattern := []byte(strings.Repeat("*a", 30) + "b")
	s := []byte(strings.Repeat("a", 5000))
	if Match(pattern, s, false) {
		t.Fatal("matched")
	}
}
