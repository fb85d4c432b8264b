package rls

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// call is one request on its way through the shards. Calls are pooled:
// a call's slices, shard requests and channel serve the next one.
type call struct {
	req   *pb.RateLimitRequest
	items []item // one per descriptor, in order
	// reqs[:nreqs] are the shard requests, one per shard the descriptors'
	// keys fall in (shards[j] is reqs[j]'s); their commands' keys alias
	// keys. reqs past nreqs are kept for reuse.
	reqs   []*cluster.Request
	nreqs  int
	shards []int
	keys   []byte
	starts []int
	done   chan struct{}
}

// item is one descriptor of a call.
type item struct {
	rule      *rule // nil: not counted (no match, replaced, unlimited)
	shared    []sharedValue
	stats     *counters
	unlimited bool
	hits      int64 // the hits addend; the engine's cost is -hits for is_negative_hits
	cost      int64
	// where its decision is: reqs[req].Results[pos]; req is -1 for a
	// limit of 0, decided without the shards.
	req, pos int
	d        engine.Decision
}

// maxPooled bounds the descriptors of a call that goes back to the pool,
// so that one huge request does not keep its memory.
const maxPooled = 64

var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 4)} }}

// getCall is a call for req, from the pool.
func getCall(req *pb.RateLimitRequest) *call {
	c := calls.Get().(*call)
	n := len(req.Descriptors)
	c.req, c.nreqs = req, 0
	c.items = slices.Grow(c.items[:0], n)[:n]
	clear(c.items)
	c.shards, c.keys, c.starts = c.shards[:0], c.keys[:0], c.starts[:0]
	return c
}

// release gives c back to the pool. Only a call whose shard requests have
// all finished may go back: a shard may still write into the others.
func (c *call) release() {
	if len(c.items) > maxPooled {
		return
	}
	clear(c.items)
	c.req = nil
	calls.Put(c)
}

// maxHits bounds a hits addend: the engine's largest cost.
const maxHits = engine.MaxCount

// decide asks the shards about every counted descriptor of c and fills in
// their decisions. Each shard gets one request holding its descriptors'
// decisions, applied as one atomic step; all are submitted before any is
// waited for.
func (s *Service) decide(ctx context.Context, c *call) error {
	// Every key is appended to c.keys first; the commands slice it once it
	// no longer grows. starts[i] is where descriptor i's key begins, and so
	// where descriptor i-1's ends.
	starts := slices.Grow(c.starts[:0], len(c.items)+1)[:len(c.items)+1]
	c.starts = starts
	for i := range c.items {
		it := &c.items[i]
		starts[i] = len(c.keys)
		if it.rule == nil {
			continue
		}
		d := c.req.Descriptors[i]
		it.hits = int64(max(c.req.HitsAddend, 1))
		if h := d.GetHitsAddend(); h != nil {
			if h.GetValue() > maxHits {
				return status.Errorf(codes.InvalidArgument, "descriptor %d: hits_addend %d is above %d", i, h.GetValue(), int64(maxHits))
			}
			it.hits = int64(h.GetValue()) // 0: look without counting
		}
		it.cost = it.hits
		if d.GetIsNegativeHits() {
			it.cost = -it.hits
		}
		if it.rule.RequestsPerUnit == 0 {
			it.req = -1 // blocks everything: nothing to ask
			continue
		}
		c.keys = appendKey(c.keys, it.rule.Algorithm, it.rule.Domain, d.GetEntries(), it.shared)
		if n := len(c.keys) - starts[i]; s.opts.MaxKeyLen > 0 && n > s.opts.MaxKeyLen {
			return status.Errorf(codes.InvalidArgument, "descriptor %d: its key of %d bytes is longer than --max-key-len %d", i, n, s.opts.MaxKeyLen)
		}
	}
	starts[len(c.items)] = len(c.keys)
	for i := range c.items {
		it := &c.items[i]
		if it.rule == nil || it.req < 0 {
			continue
		}
		cmd := ruleCommand(it.rule, it.cost)
		cmd.Key = c.keys[starts[i]:starts[i+1]:starts[i+1]]
		it.req, it.pos = c.add(s.shards.ShardOf(cluster.Slot(cmd.Key)), cmd)
	}
	if c.nreqs == 0 {
		return nil
	}
	if cap(c.done) < c.nreqs {
		c.done = make(chan struct{}, c.nreqs)
	}
	deadline, _ := ctx.Deadline() // none: the cluster's request timeout
	for j, r := range c.reqs[:c.nreqs] {
		r.Results, r.Done = slices.Grow(r.Results[:0], len(r.Cmds))[:len(r.Cmds)], c.done
		r.Deadline = deadline
		s.shards.Submit(c.shards[j], r)
	}
	for waiting := c.nreqs; waiting > 0; {
		select {
		case <-c.done:
			waiting--
		case <-ctx.Done():
			// Give up on what is unanswered: those never signal, and the
			// cluster may still hold them, so they are replaced, not
			// reused. The others signal soon: wait for them, so that
			// nothing signals this call's channel once it is reused.
			for j, r := range c.reqs[:c.nreqs] {
				if r.Expire() {
					c.reqs[j] = &cluster.Request{}
					waiting--
				}
			}
			for ; waiting > 0; waiting-- {
				<-c.done
			}
			return grpcError(ctx.Err())
		}
	}
	return c.collect()
}

// add puts cmd on the request of shard, making it if needed, and returns
// where its result will be.
func (c *call) add(shard int, cmd engine.Command) (req, pos int) {
	for j, sh := range c.shards {
		if sh == shard {
			c.reqs[j].Cmds = append(c.reqs[j].Cmds, cmd)
			return j, len(c.reqs[j].Cmds) - 1
		}
	}
	if c.nreqs == len(c.reqs) {
		c.reqs = append(c.reqs, &cluster.Request{})
	}
	r := c.reqs[c.nreqs]
	r.Cmds, r.Err = append(r.Cmds[:0], cmd), nil
	c.shards = append(c.shards, shard)
	c.nreqs++
	return c.nreqs - 1, 0
}

// collect reads the decisions of the finished shard requests.
func (c *call) collect() error {
	for _, r := range c.reqs[:c.nreqs] {
		if r.Err != nil {
			return grpcError(r.Err)
		}
	}
	for i := range c.items {
		it := &c.items[i]
		if it.rule == nil || it.req < 0 {
			continue
		}
		res := &c.reqs[it.req].Results[it.pos]
		switch res.Type {
		case engine.ResDecision:
			it.d = res.Decision
		case engine.ResError:
			return grpcError(fmt.Errorf("descriptor %d: %w", i, res.Err))
		default:
			return status.Errorf(codes.Internal, "descriptor %d: the shard answered a %d, not a decision", i, res.Type)
		}
	}
	return nil
}

// clampUint32 is n as a uint32 field holds it.
func clampUint32(n int64) uint32 {
	return uint32(min(max(n, 0), math.MaxUint32))
}
