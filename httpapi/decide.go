package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server/acl"
)

// decide answers POST /v1/decide.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, u *acl.User) int {
	var req DecideRequest
	cmds, results, err := s.execute(r, u, &req, req.args)
	if err != nil {
		return writeProblem(w, err)
	}
	limits := req.limitInfo(cmds)
	if len(req.Limits) > 0 {
		return s.answerAll(w, results, limits)
	}
	var id []byte
	if req.Reserve {
		id = reservationID(&results[0], cmds[0].Key)
	}
	return s.answer(w, &results[0], id, req.Reserve, limits)
}

// settle answers POST /v1/settle.
func (s *Server) settle(w http.ResponseWriter, r *http.Request, u *acl.User) int {
	var req SettleRequest
	_, results, err := s.execute(r, u, &req, req.args)
	if err != nil {
		return writeProblem(w, err)
	}
	return s.answer(w, &results[0], nil, false, []limitInfo{{name: "reservation"}})
}

// execute decodes r's body into req, runs the command args makes of it as
// u, and returns its engine commands and their results, the first a
// decision.
func (s *Server) execute(r *http.Request, u *acl.User, req any, args func() ([][]byte, error)) ([]engine.Command, []engine.Result, error) {
	if err := decode(r.Body, req); err != nil {
		return nil, nil, err
	}
	words, err := args()
	if err != nil {
		return nil, nil, err
	}
	cmds, err := s.parse(words, u)
	if err != nil {
		return nil, nil, err
	}
	results, err := s.run(r.Context(), cmds)
	if err != nil {
		return nil, nil, err
	}
	if res := &results[0]; res.Type != engine.ResDecision {
		return nil, nil, resultError(res)
	}
	return cmds, results, nil
}

// parse checks args as the RESP server checks a command (the user's
// permissions, the key's length, one slot for RL.ALL) and parses it into
// its engine commands. Every refusal is the client's: a 4xx.
func (s *Server) parse(args [][]byte, u *acl.User) ([]engine.Command, error) {
	spec := commands.Lookup(args[0])
	if err := spec.CheckArity(args); err != nil {
		return nil, withStatus(http.StatusBadRequest, err)
	}
	if err := u.Check(spec, args); err != nil {
		return nil, withStatus(http.StatusForbidden, err)
	}
	slot := -1
	var err error
	spec.Keys(args, func(k []byte) {
		switch sl := int(cluster.Slot(k)); {
		case err != nil:
		case s.cfg.MaxKeyLen > 0 && len(k) > s.cfg.MaxKeyLen:
			err = badRequest("a key is %d bytes long, longer than the %d bytes allowed (--max-key-len)", len(k), s.cfg.MaxKeyLen)
		case slot >= 0 && sl != slot:
			err = badRequest("the keys of limits must hash to one slot: give them one hash tag, as {user:ada}:minute and {user:ada}:day")
		default:
			slot = sl
		}
	})
	if err != nil {
		return nil, err
	}
	cmds, err := spec.Parse(args, nil)
	if err != nil {
		return nil, withStatus(http.StatusBadRequest, err)
	}
	return cmds, nil
}

// run submits cmds, all of one slot, to their shard as one request, and
// waits for their results: until the request timeout (and then the error
// says how far the request got), or until the client goes away.
func (s *Server) run(ctx context.Context, cmds []engine.Command) ([]engine.Result, error) {
	c := calls.Get().(*call)
	defer c.release()
	r := c.req
	r.Cmds, r.Results = cmds, make([]engine.Result, len(cmds))
	r.Deadline = time.Now().Add(s.cfg.RequestTimeout)
	s.cfg.Shards.Submit(s.cfg.Shards.ShardOf(cluster.Slot(cmds[0].Key)), r)
	c.timer.Reset(s.cfg.RequestTimeout + 100*time.Millisecond)
	select {
	case <-c.done:
	case <-c.timer.C:
		if r.Expire() {
			c.abandoned = true
			return nil, r.Err
		}
		<-c.done
	case <-ctx.Done():
		if r.Expire() {
			c.abandoned = true
			return nil, ctx.Err()
		}
		<-c.done
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Results, nil
}

// call is one request's wait, pooled: its request, channel and timer serve
// the next one, unless the cluster may still hold the request.
type call struct {
	req       *cluster.Request
	done      chan struct{}
	timer     *time.Timer
	abandoned bool
}

var calls = sync.Pool{New: func() any {
	done := make(chan struct{}, 1)
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &call{req: &cluster.Request{Done: done}, done: done, timer: t}
}}

// release returns c to the pool, unless its request was given up: the
// cluster may still hold that one, so it is replaced.
func (c *call) release() {
	c.timer.Stop()
	if c.abandoned {
		return
	}
	c.req.Cmds, c.req.Results = nil, nil
	calls.Put(c)
}

// resultError is the error a result that is not a decision stands for.
func resultError(res *engine.Result) error {
	if res.Type == engine.ResError {
		return res.Err
	}
	return fmt.Errorf("the shard answered a result of type %d, not a decision", res.Type)
}

// reservationID is the id of RL.RESERVE's reservation, nil when refused.
func reservationID(res *engine.Result, key []byte) []byte {
	for _, e := range res.Extras[:res.NExtras] {
		if e.Name == engine.ExtraReservation && e.Value != 0 {
			return commands.AppendReservationID(nil, cluster.SlotTag(cluster.Slot(key)), e.Value, key)
		}
	}
	return nil
}

// limitInfo names the request's limits for the headers.
func (req *DecideRequest) limitInfo(cmds []engine.Command) []limitInfo {
	if len(req.Limits) > 0 {
		out := make([]limitInfo, len(req.Limits))
		for i := range req.Limits {
			out[i] = req.Limits[i].info(&cmds[1+i])
		}
		return out
	}
	return []limitInfo{req.Limit.info(&cmds[0])}
}

// info is what the headers say of l, decided by c.
func (l *Limit) info(c *engine.Command) limitInfo {
	li := limitInfo{name: l.Name}
	if op, ok := algorithms[strings.ToLower(l.Algorithm)]; ok && l.Policy == "" {
		li.window = windowOf(op, c.Args)
		if li.name == "" {
			li.name = strings.ToLower(l.Algorithm)
		}
	}
	if li.name == "" {
		li.name = l.Policy
	}
	return li
}
