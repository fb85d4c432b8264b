package engine

import "strings"

// Param is one integer parameter of an op: its bounds, what it is to a
// limit (Role), and how its command writes it when that is not a plain
// number in Args' unit.
type Param struct {
	Name     string
	Min, Max int64
	// Zero, when set, is the error for 0 where Min excludes it: redis-cell
	// answers that a rate of zero is not supported, not that it is out of
	// range.
	Zero error
	// Role is what the parameter is to a limit of n units every window.
	Role Role
	// Words, when set, are the words the command takes for the parameter
	// instead of a number: Words[v-Min] stands for v (RL.QUOTA's period).
	Words []string
	// Keyword, when set, makes the parameter optional in its command, which
	// gives it after this word, or leaves it out for 0 (RL.QUOTA's OFFSET).
	Keyword string
	// Unit is how many of the parameter's units one of its command's is
	// (RL.QUOTA's OFFSET is in minutes, Args holds ms); 0 is the same as 1.
	Unit int64
}

// Role is what a parameter is to a limit of n units every window, so that
// a caller can lay out such a limit for any op without knowing each one's
// parameters (rls does, for Envoy's requests_per_unit and unit).
type Role uint8

// The roles.
const (
	RoleNone   Role = iota // none of these: an offset, a lease's duration, CL.THROTTLE's seconds
	RoleUnits              // n: a limit, a capacity, the units refilled or leaked, a count
	RoleBurst              // n - 1: a burst beyond the first unit (RL.GCRA's, redis-cell's)
	RoleWindow             // the window, in ms
	RolePeriod             // the window, as a calendar period
)

// Check returns nil when v is within p's bounds, and otherwise an error
// (ErrParam) that names the parameter and its bounds. (Param's methods take
// a pointer: a Param is a dozen words, which the commands' parsing and the
// codec's checks would otherwise copy for every parameter.)
func (p *Param) Check(v int64) error {
	if v >= p.Min && v <= p.Max {
		return nil
	}
	if v == 0 && p.Zero != nil {
		return p.Zero
	}
	return paramError("%s must be an integer from %d to %d", p.Name, p.Min, p.Max)
}

// InCommand is p as its command takes it: in the command's unit and, for an
// optional parameter, named by its keyword in lower case (RL.QUOTA's
// "offset", in minutes). Its Check speaks of what the caller wrote.
func (p *Param) InCommand() Param {
	in := *p
	if in.Keyword != "" {
		in.Name = strings.ToLower(in.Keyword)
	}
	if in.Unit > 1 {
		in.Min, in.Max, in.Unit = in.Min/in.Unit, in.Max/in.Unit, 1
	}
	return in
}

// FromCommand is v, as p's command gives it, in p's own unit; or, when v
// is outside the bounds the command may give, InCommand's error.
func (p *Param) FromCommand(v int64) (int64, error) {
	unit := max(p.Unit, 1)
	if v < p.Min/unit || v > p.Max/unit {
		in := p.InCommand()
		return 0, in.Check(v)
	}
	return v * unit, nil
}

// word is the word that stands for v, "" if p takes no words or none
// stands for v.
func (p *Param) word(v int64) string {
	if v < p.Min || v-p.Min >= int64(len(p.Words)) {
		return ""
	}
	return p.Words[v-p.Min]
}

// The parameters the decisions share.
var (
	pLimit    = Param{Name: "limit", Min: 1, Max: MaxCount, Role: RoleUnits}
	pWindow   = Param{Name: "window_ms", Min: 1, Max: MaxDuration, Role: RoleWindow}
	pCapacity = Param{Name: "capacity", Min: 1, Max: MaxCount, Role: RoleUnits}
	pCost     = Param{Name: "cost", Min: -MaxCount, Max: MaxCount}
)
