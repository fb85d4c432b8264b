package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/engine"
)

// A request's JSON becomes the Redis-protocol command it stands for, which
// the commands package then parses and checks as it does a RESP client's:
// one set of rules, one set of error texts, whichever protocol asks.
//
//	{"key": "user:ada", "algorithm": "token",
//	 "parameters": {"capacity": 1000, "refill_tokens": 1000, "refill_ms": 60000},
//	 "cost": 1200, "force": true}                  -> RL.TOKEN user:ada 1000 1000 60000 COST 1200 FORCE
//	{"key": "user:ada", "policy": "orders"}        -> RL.CHECK user:ada orders
//	{"key": ..., "algorithm": ..., "parameters": ..., "cost": 100, "reserve": true, "ttl_ms": 300000}
//	                                               -> RL.RESERVE TOKEN user:ada ... COST 100 TTL 300000
//	{"limits": [{...}, {...}], "cost": 1}          -> RL.ALL TOKEN ... POLICY ... COST 1
//	{"id": "{b4}1782579241943040000:user:ada", "actual": 1200}
//	                                               -> RL.SETTLE <id> 1200

// DecideRequest is the body of POST /v1/decide: one limit (Limit's fields,
// inline), or several (Limits) decided as one, all or nothing.
type DecideRequest struct {
	Limit
	// Limits, instead of one limit, are up to 16 decided as RL.ALL does:
	// if one refuses, none is spent. Their keys must share a hash slot.
	Limits []Limit `json:"limits,omitempty"`
	// Cost is the units to spend (default 1; 0 peeks, negative refunds);
	// with Reserve, the estimate.
	Cost *int64 `json:"cost,omitempty"`
	// Partial grants what is available of Cost (PARTIAL).
	Partial bool `json:"partial,omitempty"`
	// Force charges Cost whether it fits or not (FORCE).
	Force bool `json:"force,omitempty"`
	// Reserve keeps a granted Cost as a reservation, to settle with POST
	// /v1/settle (RL.RESERVE), for TTLms (default 60000).
	Reserve bool   `json:"reserve,omitempty"`
	TTLms   *int64 `json:"ttl_ms,omitempty"`
}

// Limit is one limit: a key and either an algorithm with its parameters or
// a server policy's name.
type Limit struct {
	Key       string `json:"key,omitempty"`
	Algorithm string `json:"algorithm,omitempty"`
	// Parameters are the algorithm's, by the names its command documents:
	// numbers, and RL.QUOTA's period as a word.
	Parameters map[string]json.RawMessage `json:"parameters,omitempty"`
	Policy     string                     `json:"policy,omitempty"`
	// Name names the limit in the RateLimit headers (default: the policy,
	// else the algorithm).
	Name string `json:"name,omitempty"`
}

// SettleRequest is the body of POST /v1/settle.
type SettleRequest struct {
	ID     string `json:"id"`
	Actual *int64 `json:"actual"`
}

// errBadRequest is wrapped by every error of a request's body: a 400.
var errBadRequest = errors.New("bad request")

// badRequest is a 400 saying what is wrong.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadRequest}, args...)...)
}

// decode reads a request body of at most max bytes into v, strictly: an
// unknown field, a value of the wrong type or trailing data is refused.
func decode(body io.Reader, v any) error {
	d := json.NewDecoder(body)
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var tooBig *tooLargeError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return err
		case errors.As(err, &typeErr):
			return badRequest("%s must be %s, not %s", fieldName(typeErr.Field), typeName(typeErr.Type.Kind().String()), typeErr.Value)
		case errors.Is(err, io.EOF):
			return badRequest("the body is empty: it must be a JSON object")
		}
		return badRequest("the body is not the JSON this endpoint takes: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if d.More() {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

// fieldName is a JSON field path as a reader knows it ("the body" for none).
func fieldName(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

// typeName is a Go kind as JSON calls it.
func typeName(kind string) string {
	switch kind {
	case "int64", "int":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return kind
}

// algorithms are the words of the algorithms a limit may name (RL.POLICY
// SET's), in lower case, with their ops.
var algorithms = func() map[string]engine.Op {
	m := map[string]engine.Op{}
	engine.Ops(func(op engine.Op, spec *engine.OpSpec) {
		if spec.Word != "" {
			m[strings.ToLower(spec.Word)] = op
		}
	})
	return m
}()

// algorithmList is the algorithms' words, for errors.
func algorithmList() string {
	words := make([]string, 0, len(algorithms))
	for w := range algorithms {
		words = append(words, w)
	}
	slices.Sort(words)
	return strings.Join(words, ", ")
}

// args is the command req stands for.
func (req *DecideRequest) args() ([][]byte, error) {
	if len(req.Limits) > 0 {
		return req.allArgs()
	}
	var args [][]byte
	switch {
	case req.Key == "":
		return nil, badRequest("key is required (or limits, for several)")
	case req.Reserve && req.Policy != "":
		return nil, badRequest("reserve takes an algorithm and its parameters, not a policy")
	case req.Reserve:
		op, params, err := req.Limit.params("")
		if err != nil {
			return nil, err
		}
		args = append([][]byte{[]byte("RL.RESERVE"), []byte(op.Spec().Word), []byte(req.Key)}, params...)
		args = append(args, []byte("COST"), intArg(req.cost()))
		if req.TTLms != nil {
			args = append(args, []byte("TTL"), intArg(*req.TTLms))
		}
		if req.Partial || req.Force {
			return nil, badRequest("reserve takes neither partial nor force")
		}
		return args, nil
	case req.Policy != "" && req.Algorithm == "":
		args = [][]byte{[]byte("RL.CHECK"), []byte(req.Key), []byte(req.Policy)}
	default:
		op, params, err := req.Limit.params("")
		if err != nil {
			return nil, err
		}
		args = append([][]byte{[]byte(op.Spec().Name), []byte(req.Key)}, params...)
	}
	if req.TTLms != nil {
		return nil, badRequest("ttl_ms is reserve's")
	}
	return req.options(args), nil
}

// allArgs is RL.ALL's command for req's limits.
func (req *DecideRequest) allArgs() ([][]byte, error) {
	switch {
	case req.Key != "" || req.Algorithm != "" || req.Policy != "" || req.Parameters != nil:
		return nil, badRequest("give either one limit (key and algorithm or policy) or limits, not both")
	case req.Reserve || req.Partial || req.TTLms != nil:
		return nil, badRequest("limits take neither reserve, partial nor ttl_ms")
	}
	args := [][]byte{[]byte("RL.ALL")}
	for i := range req.Limits {
		l := &req.Limits[i]
		at := fmt.Sprintf("limits[%d].", i)
		switch {
		case l.Key == "":
			return nil, badRequest("%skey is required", at)
		case l.Policy != "" && l.Algorithm == "" && l.Parameters == nil:
			args = append(args, []byte("POLICY"), []byte(l.Key), []byte(l.Policy))
			continue
		}
		op, params, err := l.params(at)
		if err != nil {
			return nil, err
		}
		args = append(append(args, []byte(op.Spec().Word), []byte(l.Key)), params...)
	}
	return req.options(args), nil
}

// options appends COST, PARTIAL and FORCE to a decision's command.
func (req *DecideRequest) options(args [][]byte) [][]byte {
	args = append(args, []byte("COST"), intArg(req.cost()))
	if req.Partial {
		args = append(args, []byte("PARTIAL"))
	}
	if req.Force {
		args = append(args, []byte("FORCE"))
	}
	return args
}

// cost is the request's cost, 1 when it gives none.
func (req *DecideRequest) cost() int64 {
	if req.Cost == nil {
		return 1
	}
	return *req.Cost
}

// params is l's algorithm and its parameters as its command takes them, in
// order; at prefixes the field names of errors.
func (l *Limit) params(at string) (engine.Op, [][]byte, error) {
	op, ok := algorithms[strings.ToLower(l.Algorithm)]
	switch {
	case l.Algorithm == "":
		return 0, nil, badRequest("%salgorithm is required (%s), or policy", at, algorithmList())
	case !ok:
		return 0, nil, badRequest("%salgorithm %q is none of %s", at, l.Algorithm, algorithmList())
	case l.Policy != "":
		return 0, nil, badRequest("%sgive an algorithm or a policy, not both", at)
	}
	specs := op.Spec().Params
	for name := range l.Parameters {
		if !slices.ContainsFunc(specs, func(p engine.Param) bool { return p.InCommand().Name == name }) {
			return 0, nil, badRequest("%sparameters.%s is not a parameter of %s, which takes %s", at, name, l.Algorithm, paramNames(op))
		}
	}
	var out [][]byte
	for i := range specs {
		p := specs[i].InCommand()
		raw, given := l.Parameters[p.Name]
		switch {
		case !given && p.Keyword != "":
			continue
		case !given:
			return 0, nil, badRequest("%sparameters.%s is required: %s takes %s", at, p.Name, l.Algorithm, paramNames(op))
		}
		v, err := paramValue(raw, &p)
		if err != nil {
			return 0, nil, badRequest("%sparameters.%s %s", at, p.Name, err)
		}
		if p.Keyword != "" {
			out = append(out, []byte(p.Keyword))
		}
		out = append(out, v)
	}
	return op, out, nil
}

// paramNames lists op's parameters as a sentence does.
func paramNames(op engine.Op) string {
	var names []string
	for _, p := range op.Spec().Params {
		n := p.InCommand().Name
		if p.Keyword != "" {
			n += " (optional)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// paramValue is a parameter's JSON value as its command takes it: an
// integer, or one of its words.
func paramValue(raw json.RawMessage, p *engine.Param) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if p.Words != nil {
		var w string
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("must be one of %s", strings.Join(p.Words, ", "))
		}
		return []byte(w), nil
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("must be an integer, not %s", raw)
	}
	return intArg(v), nil
}

// intArg is n as a command's argument.
func intArg(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// args is the command req stands for.
func (req *SettleRequest) args() ([][]byte, error) {
	switch {
	case req.ID == "":
		return nil, badRequest("id is required: the reservation_id POST /v1/decide replied")
	case req.Actual == nil:
		return nil, badRequest("actual is required: the units the work cost")
	}
	return [][]byte{[]byte("RL.SETTLE"), []byte(req.ID), intArg(*req.Actual)}, nil
}
