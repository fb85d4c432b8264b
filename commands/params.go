package commands

import (
	"errors"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// A limit's parameters are written as its op's row in the engine's table
// says: each a number in its bounds, or one of its words (RL.QUOTA's
// period), and an optional one after its keyword, in the command's unit
// (RL.QUOTA's OFFSET, in minutes). The commands that take a limit (its own
// command, RL.ALL, RL.POLICY SET) read them here, and COMMAND DOCS
// describes them from the same row.

// parseLimit builds op on key from the parameters at the head of args, with
// a cost of 1, and returns the arguments after them. Each parameter is
// parsed and checked in turn, so the first that is wrong is the one
// reported; then the engine checks them together. An optional parameter is
// read when its keyword comes next with a value after it, and is 0
// otherwise; args must hold the others (requiredParams).
func parseLimit(op engine.Op, key []byte, args [][]byte) (engine.Command, [][]byte, error) {
	c := engine.Command{Op: op, Key: key}
	params := op.Spec().Params
	for i := range params {
		p := &params[i]
		if p.Keyword != "" {
			if len(args) < 2 || !equalWord(args[0], p.Keyword) {
				continue
			}
			args = args[1:]
		}
		v, err := paramValue(args[0], p)
		if err != nil {
			return c, nil, err
		}
		c.Args[i], args = v, args[1:]
	}
	c.Args[3] = 1
	return c, args, c.Check()
}

// requiredParams is how many parameters op's command must give: those that
// are not optional.
func requiredParams(op engine.Op) int {
	n := 0
	params := op.Spec().Params
	for i := range params {
		if params[i].Keyword == "" {
			n++
		}
	}
	return n
}

// limitWords is how many of args op's parameters take, as parseLimit reads
// them: one word each, two for an optional one that is there.
func limitWords(op engine.Op, args [][]byte) int {
	n := 0
	params := op.Spec().Params
	for i := range params {
		switch kw := params[i].Keyword; {
		case kw == "":
			n++
		case len(args) >= n+2 && equalWord(args[n], kw):
			n += 2
		}
	}
	return n
}

// paramValue parses b as parameter p, as its command writes it.
func paramValue(b []byte, p *engine.Param) (int64, error) {
	if p.Words != nil {
		for k, w := range p.Words {
			if equalWord(b, w) {
				return p.Min + int64(k), nil
			}
		}
		return 0, noSuchWord(p)
	}
	v, ok := ParseInt(b)
	if !ok {
		return 0, ErrNotInteger
	}
	return p.FromCommand(v)
}

// noSuchWord is the error for a word p does not take: "ERR no such period:
// use DAY, WEEK, MONTH or YEAR".
func noSuchWord(p *engine.Param) error {
	n := len(p.Words)
	return errors.New("ERR no such " + p.Name + ": use " + strings.Join(p.Words[:n-1], ", ") + " or " + p.Words[n-1])
}

// paramArg parses b as the integer parameter p: ErrNotInteger when it is
// not an integer, the engine's error when it is outside p's bounds.
func paramArg(b []byte, p *engine.Param) (int64, error) {
	v, ok := ParseInt(b)
	if !ok {
		return 0, ErrNotInteger
	}
	return v, p.Check(v)
}

// equalWord reports whether b is the ASCII word w, ignoring case in both,
// without allocating.
func equalWord(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		if lowerASCII(b[i]) != lowerASCII(w[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// paramArgs documents op's parameters for COMMAND DOCS, as parseLimit reads
// them.
func paramArgs(op engine.Op) []Arg {
	var out []Arg
	params := op.Spec().Params
	for i := range params {
		switch p := &params[i]; {
		case p.Words != nil:
			a := Arg{Name: p.Name, Type: "oneof"}
			for _, w := range p.Words {
				a.Args = append(a.Args, Arg{Name: strings.ToLower(w), Type: "pure-token", Token: w})
			}
			out = append(out, a)
		case p.Keyword != "":
			out = append(out, Arg{Name: p.InCommand().Name, Type: "integer", Token: p.Keyword, Optional: true})
		default:
			out = append(out, Arg{Name: p.Name, Type: "integer"})
		}
	}
	return out
}
