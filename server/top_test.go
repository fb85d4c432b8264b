package server

import (
	"strings"
	"testing"
)

// RL.TOP lists the heaviest keys over every shard (the test server has
// four), and INFO's topkeys section the first five.
func TestTop(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	// ada: 2 allowed, 8 denied; bob: 2 allowed, 3 denied; cy: 1 allowed.
	for range 10 {
		c.do("RL.SLIDING", "ada", "2", "60000")
	}
	for range 5 {
		c.do("RL.SLIDING", "bob", "2", "60000")
	}
	c.do("RL.SLIDING", "cy", "2", "60000")

	c.expect("*2\r\n*3\r\n$3\r\nada\r\n:8\r\n:0\r\n*3\r\n$3\r\nbob\r\n:3\r\n:0\r\n", "RL.TOP")
	c.expect("*1\r\n*3\r\n$3\r\nada\r\n:8\r\n:0\r\n", "rl.top", "denied", "COUNT", "1")
	c.expect("*3\r\n*3\r\n$3\r\nada\r\n:2\r\n:0\r\n*3\r\n$3\r\nbob\r\n:2\r\n:0\r\n*3\r\n$2\r\ncy\r\n:1\r\n:0\r\n", "RL.TOP", "ALLOWED")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"RL.TOP", "COUNT", "0"}, "-ERR count must be an integer from 1 to 64\r\n"},
		{[]string{"RL.TOP", "COUNT", "65"}, "-ERR count must be an integer from 1 to 64\r\n"},
		{[]string{"RL.TOP", "COUNT", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"RL.TOP", "COUNT"}, "-ERR syntax error\r\n"},
		{[]string{"RL.TOP", "SOMETIMES"}, "-ERR syntax error\r\n"},
	} {
		c.expect(bad.want, bad.args...)
	}

	info, _ := parse(t, c.do("INFO", "topkeys")).(string)
	for _, want := range []string{"# Topkeys\r\n", "top_denied_0:key=\"ada\",decisions=8,error=0\r\n",
		"top_denied_1:key=\"bob\",decisions=3,error=0\r\n", "top_allowed_2:key=\"cy\",decisions=1,error=0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO topkeys lacks %q:\n%s", want, info)
		}
	}
}
