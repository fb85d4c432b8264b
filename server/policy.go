package server

import (
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// Policies live in every shard, since RL.CHECK runs on the shard of its key.
// RL.POLICY SET and DEL go to every shard through its log, so that they are
// replicated and survive restarts like the keys; GET and LIST go through the
// log too, so that on any node they answer what every acknowledged SET and
// DEL did (INFO reads this node's replicas). SET and DEL are idempotent:
// after an error (TRYAGAIN when a shard has no leader), sending them again
// completes them.

// policySet is RL.POLICY SET name algorithm parameters...: the policy
// defined on every shard.
func (c *conn) policySet(_ *commands.Spec, args [][]byte, out []byte) []byte {
	set, err := commands.ParsePolicySet(args)
	if err == nil {
		err = c.srv.checkFederated([]engine.Command{set})
	}
	if err != nil {
		return appendError(out, err)
	}
	if _, err := c.everyShard(set); err != nil {
		return appendError(out, err)
	}
	return resp.AppendOK(out)
}

// policyDel is RL.POLICY DEL name: 1 if it existed.
func (c *conn) policyDel(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if err := commands.ParsePolicyName(args[2]); err != nil {
		return appendError(out, err)
	}
	results, err := c.everyShard(engine.Command{Op: engine.OpPolicyDel, Value: args[2]})
	if err != nil {
		return appendError(out, err)
	}
	existed := int64(0)
	for _, r := range results {
		existed = max(existed, r.Int)
	}
	return resp.AppendInt(out, existed)
}

// policyGet is RL.POLICY GET name: its definition, and its counters over
// every shard.
func (c *conn) policyGet(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if err := commands.ParsePolicyName(args[2]); err != nil {
		return appendError(out, err)
	}
	results, err := c.everyShard(engine.Command{Op: engine.OpPolicyList, Value: args[2]})
	if err != nil {
		return appendError(out, err)
	}
	r := sumPolicy(results)
	return appendResult(out, &r, c.resp3.Load())
}

// policyList is RL.POLICY LIST. Every shard holds every policy: one
// shard's log answers, read through its leader whether this node holds a
// replica of it or not.
func (c *conn) policyList(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	results, err := c.everyShard(engine.Command{Op: engine.OpPolicyList}, func(shard int) bool { return shard == 0 })
	if err != nil {
		return appendError(out, err)
	}
	return appendResult(out, &results[0], c.resp3.Load())
}

// policy is a policy's definition and counters as this node's replicas
// hold them, for INFO.
func (s *Server) policy(name string) (engine.Result, error) {
	results := make([]engine.Result, s.shards.Shards())
	for shard := range results {
		r, err := s.shards.Read(shard, engine.Command{Op: engine.OpPolicyList, Value: []byte(name)})
		if err != nil {
			return r, err
		}
		results[shard] = r
	}
	return sumPolicy(results), nil
}

// policyListShard is the shard INFO reads the list of policies from. Every
// shard holds every policy, but a node of a cluster of more than three nodes
// holds no replica of some shards (their Stats are zero, and reading them goes
// to their leader): one this node holds, the one that reports the most
// policies; shard 0 when none reports any.
func (s *Server) policyListShard() int {
	best, most := 0, 0
	for shard := range s.shards.Shards() {
		if n := s.shards.Stats(shard).Policies; n > most {
			best, most = shard, n
		}
	}
	return best
}

// sumPolicy is one policy's definition, with the counters of every shard
// added up (each counts the checks of the keys it holds).
func sumPolicy(results []engine.Result) engine.Result {
	var sum engine.Result
	for _, r := range results {
		if r.Type != engine.ResFields {
			continue // a shard the definition has not reached: counts nothing
		}
		if sum.Type != engine.ResFields {
			sum = r
			continue
		}
		for i := range sum.Fields {
			if sum.Fields[i].Text == "" && sum.Fields[i].Name != "shadow" {
				sum.Fields[i].Int += r.Fields[i].Int
			}
		}
	}
	if sum.Type == engine.ResNone {
		sum.Type = engine.ResNil
	}
	return sum
}

// writePolicyInfo writes INFO's policies section: each policy's counters, in
// the form of Redis's keyspace lines.
func (s *Server) writePolicyInfo(b *strings.Builder, _ *engine.Stats) {
	list, err := s.shards.Read(s.policyListShard(), engine.Command{Op: engine.OpPolicyList})
	if err != nil {
		return
	}
	for _, f := range list.Fields {
		p, err := s.policy(f.Name)
		if err != nil || p.Type != engine.ResFields {
			continue
		}
		fmt.Fprintf(b, "policy_%s:", f.Name)
		for i, field := range p.Fields[1:] {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%s=%d", field.Name, field.Int)
		}
		b.WriteString("\r\n")
	}
}
