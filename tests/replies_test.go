package tests

import (
	"fmt"
	"testing"
)

// One decision command per algorithm, on its own key, each allowed on a
// fresh key. Every RL.* command must answer in the same shape.
var decisionCommands = []string{
	"RL.SLIDING shape:sliding 10 1000",
	"RL.FIXED shape:fixed 10 1000",
	"RL.LOG shape:log 10 1000",
	"RL.TOKEN shape:token 10 1 100",
	"RL.LEAKY shape:leaky 10 1 100",
	"RL.GCRA shape:gcra 9 1 100",
}

// Through go-redis's generic Do, a user sees RL.* replies as an array of five
// integers in RESP2 and as a map of five named integers in RESP3, while
// CL.THROTTLE stays an array of five integers in both.
func TestReplyShapes(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			c := srv.Client(t, protocol)
			setClock(t, c, 1_700_000_000_500)
			for _, cmd := range decisionCommands {
				args := words(cmd)
				args[1] = fmt.Sprintf("%s:resp%d", args[1], protocol) // fresh for each protocol
				v := do(t, c, args...)
				switch r := v.(type) {
				case []any:
					if protocol != 2 {
						t.Errorf("%s in RESP3: got an array %v, want a map", cmd, r)
					}
				case map[any]any:
					if protocol != 3 {
						t.Errorf("%s in RESP2: got a map %v, want an array", cmd, r)
					}
				}
				d, err := parseDecision(v)
				if err != nil {
					t.Fatalf("%s: %v", cmd, err)
				}
				if !d.Allowed || d.Limit != 10 || d.Remaining != 9 || d.RetryAfter != 0 || d.ResetAfter <= 0 {
					t.Errorf("%s = %v, want allowed with limit 10 and 9 remaining", cmd, d)
				}
			}
			v := do(t, c, words(fmt.Sprintf("CL.THROTTLE shape:cell%d 15 30 60", protocol))...)
			if r, err := parseThrottle(v); err != nil || r != (throttleReply{0, 16, 15, -1, 2}) {
				t.Errorf("CL.THROTTLE in RESP%d = %v (%v), want the array [0 16 15 -1 2]", protocol, v, err)
			}
		})
	}
}

// The bytes on the wire, in the order the design brief and README give:
// RESP2 a five-integer array, RESP3 (after HELLO 3) a map whose keys come in
// the documented order, and CL.THROTTLE an array even in RESP3.
func TestReplyWireFormat(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	c.send(command("DEBUG", "CLOCK", "SET", "59900"))
	if got := c.reply(); got != ":59900" {
		t.Fatalf("DEBUG CLOCK SET = %s", got)
	}
	c.send(command("RL.SLIDING", "wire", "100", "60000"))
	if got, want := c.reply(), "*[:1 :100 :99 :0 :60100]"; got != want {
		t.Errorf("RESP2 decision = %s, want %s", got, want)
	}
	c.send(command("HELLO", "3"))
	if got := c.reply(); got[0] != '%' {
		t.Fatalf("HELLO 3 = %s, want a map", got)
	}
	c.send(command("RL.SLIDING", "wire", "100", "60000"))
	want := "%{$allowed :1 $limit :100 $remaining :98 $retry_after_ms :0 $reset_after_ms :60100}"
	if got := c.reply(); got != want {
		t.Errorf("RESP3 decision = %s, want %s", got, want)
	}
	c.send(command("CL.THROTTLE", "wire:cell", "15", "30", "60"))
	if got, want := c.reply(), "*[:0 :16 :15 :-1 :2]"; got != want {
		t.Errorf("RESP3 CL.THROTTLE = %s, want %s", got, want)
	}
	c.send(command("HELLO", "2"))
	if got := c.reply(); got[0] != '*' {
		t.Fatalf("HELLO 2 = %s, want a flat array", got)
	}
	c.send(command("RL.SLIDING", "wire", "100", "60000"))
	if got, want := c.reply(), "*[:1 :100 :97 :0 :60100]"; got != want {
		t.Errorf("back in RESP2 = %s, want %s", got, want)
	}
}

// HELLO's reply carries what clients pick their behaviour from: a Redis 7
// version (rueidis changes course at 8), the protocol and the mode.
func TestHelloReply(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	m, ok := do(t, c, "HELLO", "3").(map[any]any)
	if !ok {
		t.Fatalf("HELLO 3 is not a map")
	}
	want := map[string]any{"server": "rlserver", "proto": int64(3), "mode": "standalone", "role": "master"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("HELLO 3 %s = %v, want %v", k, m[k], v)
		}
	}
	if v, _ := m["version"].(string); len(v) < 2 || v[:2] != "7." {
		t.Errorf("HELLO 3 version = %q, want 7.x", m["version"])
	}
	if got := doErr(t, c, "HELLO", "4"); got != "NOPROTO unsupported protocol version" {
		t.Errorf("HELLO 4: %q", got)
	}
}
