package rls

import (
	"context"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"

	"github.com/rlserver/rlserver/engine"
)

// outgoing is an assignment about to be sent, and the grant it carries (0
// for a blanket rule decided without RL.SHARE).
type outgoing struct {
	b   *quotaBucket
	a   assignment
	seq int64
}

// assign decides the assignments of bs, in their order: a blanket rule
// where the config says so, else the holder's grant, asked for with
// RL.SHARE (one request per shard, all at once). With always, every one is
// sent (a report's answer, which extends the TTL: Envoy keeps the state of
// a bucket whose strategy is unchanged); without, only those that changed,
// or that would lapse before the next report. A grant that could not be
// asked for sends nothing: the Envoy keeps its last assignment until its
// TTL.
func (s *quotaStream) assign(bs []*quotaBucket, now time.Time, always bool) []outgoing {
	interval := s.timing.interval()
	decided := make([]assignment, len(bs))
	seqs := make([]int64, len(bs))
	var cmds []engine.Command
	var asked []int // the index in bs of each command
	for i, b := range bs {
		if a, fixed := blanket(b.rule); fixed {
			decided[i] = a
			continue
		}
		req := b.rule.shareRequest(s.holder, b.demand, s.timing.shareTTL(), b.ackable(now, s.timing.ackDelay()))
		cmds = append(cmds, req.Command(b.key))
		asked = append(asked, i)
		b.shared = true
	}
	if len(cmds) > 0 {
		for j, r := range submitAll(s.ctx, s.q.svc.shards, cmds) {
			i, b := asked[j], bs[asked[j]]
			if r.Type != engine.ResRecord || len(r.Fields) != len(engine.ShareReply) {
				s.q.stats.grantErrors.Add(1)
				s.q.log.Warn("quota grant not asked for: the bucket keeps its assignment until its TTL",
					"domain", s.domain, "key", string(b.key), "err", r.Err)
				continue
			}
			s.q.stats.grants.Add(1)
			decided[i] = grantAssignment(r.Fields[0].Int, r.Fields[1].Int, b.rule.rule.Window())
			seqs[i] = r.Fields[3].Int
		}
	}
	var out []outgoing
	for i, b := range bs {
		a := decided[i]
		if a.kind != assignNone && (always || a != b.sent || now.Sub(b.sentAt) > b.sentTTL-interval) {
			out = append(out, outgoing{b: b, a: a, seq: seqs[i]})
		}
	}
	return out
}

// send sends abandons and out as one response, if there is anything to
// send, and notes each assignment as sent once it is on its way: an ack
// counts from then, after the shards answered (an election may take
// seconds) and the stream took it (a slow Envoy may hold it back).
func (s *quotaStream) send(abandons []*qpb.RateLimitQuotaResponse_BucketAction, out []outgoing) error {
	if len(abandons)+len(out) == 0 {
		return nil
	}
	ttl := s.timing.envoyTTL()
	actions := abandons
	for _, o := range out {
		actions = append(actions, o.a.action(o.b.id, ttl))
	}
	if err := s.stream.Send(&qpb.RateLimitQuotaResponse{BucketAction: actions}); err != nil {
		return err
	}
	s.q.stats.countSent(actions)
	sent := time.Now()
	for _, o := range out {
		o.b.recordSent(o.a, o.seq, sent, ttl)
	}
	return nil
}

// reconfigure matches the buckets again when the config changed since
// they were: a bucket whose rule left the config is abandoned (Envoy
// forgets it, and starts it anew at its next request), and the grants of
// one no longer limited are given back. The new rules take effect in the
// assignments that follow.
func (s *quotaStream) reconfigure() []*qpb.RateLimitQuotaResponse_BucketAction {
	cfg := s.q.svc.Config()
	if cfg == s.cfg {
		return nil
	}
	s.cfg = cfg
	var abandons []*qpb.RateLimitQuotaResponse_BucketAction
	var unshare [][]byte
	for key, b := range s.buckets {
		r := cfg.matchQuota(s.domain, b.id.GetBucket())
		if r == nil && b.rule != nil {
			abandons = append(abandons, abandonAction(b.id))
			if b.shared {
				unshare = append(unshare, b.key)
			}
			b.release(true)
			delete(s.buckets, key)
			s.q.stats.activeBuckets.Add(-1)
			continue
		}
		_, fixed := blanket(r)
		b.move(s.q.rules.of(r), fixed && b.shared)
		if fixed && b.shared {
			unshare = append(unshare, b.key)
			b.shared, b.pending, b.ack = false, nil, 0
		}
		if r != nil && b.rule != nil && r.rule.Window() != b.rule.rule.Window() {
			b.demand, b.measured = engine.UnknownDemand, engine.UnknownDemand // per the old window: measured again
		}
		b.rule = r
	}
	s.unshare(unshare)
	return abandons
}

// unshare gives the holder's grants on keys back (RL.UNSHARE), best
// effort: a grant not given back expires with its TTL.
func (s *quotaStream) unshare(keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	cmds := make([]engine.Command, len(keys))
	for i, k := range keys {
		cmds[i] = engine.Command{Op: engine.OpUnshare, Key: k, Value: s.holder}
	}
	ctx, cancel := context.WithTimeout(context.Background(), unshareTimeout)
	defer cancel()
	for _, r := range submitAll(ctx, s.q.svc.shards, cmds) {
		if r.Type == engine.ResInt && r.Int == 1 {
			s.q.stats.unshares.Add(1)
		}
	}
}
