package federation

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// The federation port speaks RESP. On a new connection the server sends
// a challenge, ["FED", nonce, its region]; the client answers with
// AUTH region mac nonce, the HMAC of the server's nonce under the secret
// (authMAC), and a nonce of its own, which the server answers with its
// own HMAC, so each end knows the other holds the secret. Then:
//
//	LEASE key p0 p1 p2 request   an engine.GlobalLeaseRequest (its Command's
//	                             Value); the reply is the grant's encoding
//	COUNTS key p0 p1 p2 counts   an engine.GlobalCounts; +OK
//
// each command checked as a Raft entry is (engine.Command.Check), with the
// region it names the one the connection authenticated. A client
// pipelines its commands; the server applies what has arrived together,
// one request per shard, and answers in order.

// maxServeBatch bounds the commands the server applies together.
const maxServeBatch = 4096

// Serve answers the other regions on ln until Close; it returns nil then.
func (f *Federation) Serve(ln net.Listener) error {
	f.mu.Lock()
	f.listeners = append(f.listeners, ln)
	f.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-f.stop:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if f.cfg.ServerTLS != nil {
			c = tls.Server(c, f.cfg.ServerTLS)
		}
		if !f.track(c) {
			c.Close()
			return nil
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			f.serveConn(c)
		}()
	}
}

// track records a server connection, to be closed at Close: false once
// the federation is closing.
func (f *Federation) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stop:
		return false
	default:
	}
	f.conns[c] = struct{}{}
	return true
}

// untrack closes and forgets a server connection.
func (f *Federation) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// serveConn authenticates a peer and answers its commands.
func (f *Federation) serveConn(c net.Conn) {
	c.SetDeadline(time.Now().Add(f.linkTimeout()))
	br := bufio.NewReader(c)
	r, w := resp.NewReader(br), bufio.NewWriter(c)
	region, err := f.greetClient(c, r, w)
	if err != nil {
		f.stats.authFailures.Add(1)
		f.cfg.Log.Warn("federation peer refused", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	c.SetDeadline(time.Time{})
	var vals []resp.Value
	for {
		var cmds [][]resp.Value
		for len(cmds) == 0 || (br.Buffered() > 0 && len(cmds) < maxServeBatch) {
			if vals, err = r.Read(vals[:0]); err != nil {
				return
			}
			cmds = append(cmds, slices.Clone(vals))
		}
		out := f.answer(region, cmds, nil)
		if _, err := w.Write(out); err != nil || w.Flush() != nil {
			return
		}
	}
}

// greetClient sends the challenge and checks the answer; it returns the
// client's region.
func (f *Federation) greetClient(c net.Conn, r *resp.Reader, w *bufio.Writer) (string, error) {
	nonce := newNonce()
	w.Write(resp.AppendCommand(nil, "FED", nonce, f.cfg.Region))
	if err := w.Flush(); err != nil {
		return "", err
	}
	v, err := r.Read(nil)
	if err != nil {
		return "", err
	}
	words := bulkWords(v)
	if len(words) != 4 || string(words[0]) != "AUTH" {
		return "", fmt.Errorf("%w: no AUTH", errAuth)
	}
	region, mac, theirs := string(words[1]), string(words[2]), string(words[3])
	if !slices.ContainsFunc(f.cfg.Peers, func(p Peer) bool { return p.Name == region }) ||
		!checkMAC(f.cfg.Secret, nonce, region, mac) {
		w.Write(resp.AppendError(nil, "ERR", "federation: authentication failed"))
		w.Flush()
		return "", fmt.Errorf("%w: region %q", errAuth, region)
	}
	w.Write(resp.AppendBulkString(nil, authMAC(f.cfg.Secret, theirs, f.cfg.Region)))
	return region, w.Flush()
}

// greetServer answers a server's challenge and checks its answer to ours.
func (f *Federation) greetServer(c net.Conn, r *resp.Reader, want string) error {
	v, err := r.Read(nil)
	if err != nil {
		return err
	}
	words := bulkWords(v)
	if len(words) != 3 || string(words[0]) != "FED" || string(words[2]) != want {
		return fmt.Errorf("%w: not region %s's federation port", errAuth, want)
	}
	mine := newNonce()
	cmd := resp.AppendCommand(nil, "AUTH", f.cfg.Region, authMAC(f.cfg.Secret, string(words[1]), f.cfg.Region), mine)
	if _, err := c.Write(cmd); err != nil {
		return err
	}
	if v, err = r.Read(nil); err != nil {
		return err
	}
	if len(v) != 1 || v[0].Kind != resp.KindBulk || !checkMAC(f.cfg.Secret, mine, want, v[0].Str) {
		return fmt.Errorf("%w: region %s did not prove the secret", errAuth, want)
	}
	return nil
}

// bulkWords are the words of a command read as RESP values: nil unless it
// is an array of bulk strings.
func bulkWords(v []resp.Value) [][]byte {
	if len(v) == 0 || v[0].Kind != resp.KindArray || int(v[0].Int) != len(v)-1 {
		return nil
	}
	words := make([][]byte, 0, len(v)-1)
	for _, e := range v[1:] {
		if e.Kind != resp.KindBulk {
			return nil
		}
		words = append(words, []byte(e.Str))
	}
	return words
}

// answer applies a peer's commands and appends their replies, in order.
func (f *Federation) answer(region string, cmds [][]resp.Value, out []byte) []byte {
	ecmds := make([]engine.Command, len(cmds))
	errs := make([]error, len(cmds))
	for i, v := range cmds {
		ecmds[i], errs[i] = f.peerCommand(region, bulkWords(v))
	}
	results, rerrs := f.applyAll(ecmds, errs)
	for i := range cmds {
		switch {
		case rerrs[i] != nil:
			out = resp.AppendError(out, "ERR", rerrs[i].Error())
		case results[i].Type == engine.ResError:
			out = resp.AppendError(out, "ERR", results[i].Err.Error())
		case ecmds[i].Op == engine.OpGlobalLease:
			out = resp.AppendBulkString(out, results[i].Text)
		default:
			out = resp.AppendOK(out)
		}
	}
	return out
}

// peerCommand is the engine command a peer's LEASE or COUNTS asks for.
func (f *Federation) peerCommand(region string, words [][]byte) (engine.Command, error) {
	if len(words) != 6 {
		return engine.Command{}, errors.New("federation: malformed command")
	}
	c := engine.Command{Key: words[1], Value: words[5]}
	for j := range 3 {
		v, err := strconv.ParseInt(string(words[2+j]), 10, 64)
		if err != nil {
			return c, errors.New("federation: malformed command")
		}
		c.Args[j] = v
	}
	var named string
	switch string(words[0]) {
	case "LEASE":
		c.Op = engine.OpGlobalLease
		q, err := engine.DecodeGlobalLease(&c)
		if err != nil {
			return c, err
		}
		named = q.Region
		f.stats.leasesServed.Add(1)
	case "COUNTS":
		c.Op = engine.OpGlobalCounts
		q, err := engine.DecodeGlobalCounts(&c)
		if err != nil {
			return c, err
		}
		named = q.Region
		c = f.withBound(c, q)
		f.stats.countsReceived.Add(1)
	default:
		return c, fmt.Errorf("federation: unknown command %q", words[0])
	}
	if named != region {
		return c, fmt.Errorf("federation: region %q speaks for %q", region, named)
	}
	return c, c.Check()
}

// applyAll applies cmds on this region's shards, one request per shard,
// all submitted before any is waited for; a command with an error in errs
// is skipped. It returns each command's result, or its error.
func (f *Federation) applyAll(cmds []engine.Command, errs []error) ([]engine.Result, []error) {
	byShard := map[int][]int{}
	for i := range cmds {
		if errs[i] == nil {
			s := f.shards.ShardOf(cluster.Slot(cmds[i].Key))
			byShard[s] = append(byShard[s], i)
		}
	}
	results := make([]engine.Result, len(cmds))
	type sent struct {
		idx  []int
		r    *cluster.Request
		done chan struct{}
	}
	var reqs []sent
	deadline := time.Now().Add(f.linkTimeout())
	for s, idx := range byShard {
		sub := make([]engine.Command, len(idx))
		for k, i := range idx {
			sub[k] = cmds[i]
		}
		done := make(chan struct{}, 1)
		r := &cluster.Request{Cmds: sub, Results: make([]engine.Result, len(sub)), Done: done, Deadline: deadline}
		f.shards.Submit(s, r)
		reqs = append(reqs, sent{idx, r, done})
	}
	for _, q := range reqs {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		select {
		case <-q.done:
		case <-ctx.Done():
			if !q.r.Expire() {
				<-q.done
			}
		}
		cancel()
		for k, i := range q.idx {
			if q.r.Err != nil {
				errs[i] = q.r.Err
			} else {
				results[i] = q.r.Results[k]
			}
		}
	}
	return results, errs
}
