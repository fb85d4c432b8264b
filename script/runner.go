package script

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// Config configures a Runner.
type Config struct {
	// ErrorText is an error's reply text, its first word included (the
	// server's wording: server.ErrorText), for the errors scripts see as
	// {err=...}.
	ErrorText func(error) string
	// Log takes redis.log's records.
	Log *slog.Logger
	// RedisVersion is what redis.REDIS_VERSION says.
	RedisVersion string
}

// Runner runs the scripts of every shard: it implements
// engine.ScriptRunner. Shards call it concurrently, each from its own
// goroutine; each run takes an interpreter of its own.
type Runner struct {
	cfg Config

	mu     sync.Mutex
	idle   []*interp                     // interpreters not running
	protos map[string]*lua.FunctionProto // compiled scripts, by SHA1
}

// maxCompiled bounds the compiled scripts kept: compiling again is the
// only cost of forgetting one.
const maxCompiled = 2048

// New returns a runner.
func New(cfg Config) *Runner {
	if cfg.ErrorText == nil {
		cfg.ErrorText = func(err error) string { return err.Error() }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.RedisVersion == "" {
		cfg.RedisVersion = "7.4.0"
	}
	return &Runner{cfg: cfg, protos: make(map[string]*lua.FunctionProto)}
}

var _ engine.ScriptRunner = (*Runner)(nil)

// Compile compiles body, or returns Redis's error for a script that does
// not compile.
func (r *Runner) Compile(body []byte) error {
	_, err := r.proto(engine.SHA1Hex(body), body)
	return err
}

// proto returns the compiled body, named sha.
func (r *Runner) proto(sha string, body []byte) (*lua.FunctionProto, error) {
	r.mu.Lock()
	p, ok := r.protos[sha]
	r.mu.Unlock()
	if ok {
		return p, nil
	}
	chunk, err := parse.Parse(io.MultiReader(strings.NewReader(hoist(body)), bytes.NewReader(body)), chunkName)
	if err == nil {
		p, err = lua.Compile(chunk, chunkName)
	}
	if err != nil {
		return nil, &engine.Error{Code: engine.CodeScript, Msg: "ERR Error compiling script (new function): " + firstLine(err.Error())}
	}
	r.mu.Lock()
	if len(r.protos) >= maxCompiled {
		for k := range r.protos { // any one: the cache only saves time
			delete(r.protos, k)
			break
		}
	}
	r.protos[sha] = p
	r.mu.Unlock()
	return p, nil
}

// Run runs call's script on an idle interpreter, and appends its reply
// to dst.
func (r *Runner) Run(call *engine.ScriptCall, dst []resp.Value) ([]resp.Value, error) {
	p, err := r.proto(call.SHA, call.Body)
	if err != nil {
		return nil, err
	}
	in := r.take()
	defer r.give(in)
	return in.run(p, call, dst)
}

func (r *Runner) take() *interp {
	r.mu.Lock()
	if n := len(r.idle); n > 0 {
		in := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.mu.Unlock()
		return in
	}
	r.mu.Unlock()
	return newInterp(r)
}

func (r *Runner) give(in *interp) {
	r.mu.Lock()
	r.idle = append(r.idle, in)
	r.mu.Unlock()
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var _ context.Context = (*meter)(nil)

// hoistable are the globals a script reads most, and none writes (they are
// read-only): KEYS, ARGV and the functions and libraries limiter scripts
// call in their hot paths.
var hoistable = []string{"KEYS", "ARGV", "redis", "tonumber", "tostring", "math", "string", "table",
	"type", "pairs", "ipairs", "unpack", "select", "next", "pcall", "error", "assert"}

// hoist is what is compiled before a script's body, on its first line:
// "local KEYS, ARGV, ... = KEYS, ARGV, ...;" for the hoistable globals the
// body names, so that each is read from the protected globals once a run,
// not at every use (a global read goes through the read-only view, three
// table lookups). Line numbers are unchanged. Assigning to one of these
// names then assigns the local instead of failing as a global write
// (docs/scripting.md).
func hoist(body []byte) string {
	var names []string
	for _, n := range hoistable {
		if namesIdentifier(body, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	list := strings.Join(names, ",")
	return "local " + list + "=" + list + ";"
}

// namesIdentifier reports whether name occurs in body as a whole word.
func namesIdentifier(body []byte, name string) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(name))
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isIdent(body[start-1])) && (end == len(body) || !isIdent(body[end])) {
			return true
		}
		i = end
	}
}

func isIdent(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
