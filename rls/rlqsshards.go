package rls

import (
	"context"
	"fmt"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// submitAll applies cmds on their keys' shards, one request per shard, all
// submitted before any is waited for, and returns a result per command, in
// order. A shard's failure (no leader within the request timeout, ctx
// ended) is the result of each of its commands, as an error result: the
// others' still count. Nothing is pooled: a stream asks a few times a
// report interval, not a few times a request.
func submitAll(ctx context.Context, shards Shards, cmds []engine.Command) []engine.Result {
	type batch struct {
		req *cluster.Request
		pos []int // where each of its commands is in cmds
	}
	byShard := map[int]*batch{}
	var order []*batch
	for i, c := range cmds {
		sh := shards.ShardOf(cluster.Slot(c.Key))
		b, ok := byShard[sh]
		if !ok {
			b = &batch{req: &cluster.Request{}}
			byShard[sh] = b
			order = append(order, b)
		}
		b.req.Cmds = append(b.req.Cmds, c)
		b.pos = append(b.pos, i)
	}
	done := make(chan struct{}, len(order))
	deadline, _ := ctx.Deadline()
	for sh, b := range byShard {
		b.req.Done, b.req.Deadline = done, deadline
		b.req.Results = make([]engine.Result, len(b.req.Cmds))
		shards.Submit(sh, b.req)
	}
	out := make([]engine.Result, len(cmds))
	failed := make(map[*batch]error)
	for waiting := len(order); waiting > 0; {
		select {
		case <-done:
			waiting--
		case <-ctx.Done():
			for _, b := range order {
				if b.req.Expire() {
					failed[b] = fmt.Errorf("%w: %w", ctx.Err(), b.req.Err)
					waiting--
				}
			}
			for ; waiting > 0; waiting-- {
				<-done
			}
		}
	}
	for _, b := range order {
		err := failed[b]
		if err == nil {
			err = b.req.Err
		}
		for j, i := range b.pos {
			if err != nil {
				out[i] = engine.Result{Type: engine.ResError, Err: err}
				continue
			}
			out[i] = b.req.Results[j]
		}
	}
	return out
}
