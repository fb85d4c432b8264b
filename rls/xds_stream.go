package rls

import (
	"context"
	"crypto/sha256"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// One xDS stream, state of the world. The first request names this node
// and the type, with no version and no resource names (all of them: the
// control plane sends every RateLimitConfig it has for the node, even to a
// node that had them before a reconnect, for a control plane that
// restarted may reuse a version for other content: Envoy Gateway numbers
// its snapshots from 1 at each start). Each response holds every
// resource; it is loaded with LoadXDS's checks and, when they pass, put in
// force and acknowledged: a request with the response's version_info and
// nonce. When they fail, the config in force stays, the fault is logged and
// counted, and the response is refused: a request with the nonce, the
// version in force and error_detail saying why. A control plane answers a
// refusal by sending what it has again, the same refused set (go-control-
// plane's snapshot cache does, at once): a set refused before is refused
// again after a wait that grows as the waits between streams do, without
// another log line, so that the exchange does not spin. Sets are told
// apart by their content, not their version: the config in force sent
// again is acknowledged without a reload.

// XDSTypeURL is the type of the resources XDS subscribes to.
const XDSTypeURL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// stream runs one stream until it fails; received is true when a response
// came on it.
func (x *XDS) stream() (received bool, err error) {
	ctx, cancel := context.WithCancel(x.ctx) // ends the stream however this returns
	defer cancel()
	s, err := discoverypb.NewAggregatedDiscoveryServiceClient(x.conn).StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	if err := s.Send(&discoverypb.DiscoveryRequest{Node: x.node, TypeUrl: XDSTypeURL}); err != nil {
		return false, err
	}
	x.mu.Lock()
	x.stats.Connected = true
	x.stats.Streams++
	x.mu.Unlock()
	x.log.Info("xDS stream open", "server", x.opts.Server, "node_id", x.opts.NodeID)
	for {
		resp, err := s.Recv()
		if err != nil {
			return received, err
		}
		received = true
		req, wait := x.handle(resp)
		if wait > 0 && !x.sleep(wait) {
			return received, x.ctx.Err()
		}
		if err := s.Send(req); err != nil {
			return received, err
		}
	}
}

// handle loads a response and returns the request that answers it, an
// acknowledgement or a refusal, and how long to wait before sending it.
func (x *XDS) handle(resp *discoverypb.DiscoveryResponse) (*discoverypb.DiscoveryRequest, time.Duration) {
	sum := fingerprintResources(resp)
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case sum == x.accepted && x.stats.Accepted > 0: // the config in force, sent again: nothing to load
		x.stats.Version, x.refused, x.repeats = resp.GetVersionInfo(), [sha256.Size]byte{}, 0
		return x.request(resp, ""), 0
	case sum == x.refused:
		x.repeats++
		x.log.Debug("xDS config refused again", "version", resp.GetVersionInfo(), "times", x.repeats+1)
		return x.request(resp, x.why), x.backoff(x.repeats)
	}
	cfg, err := decodeXDS(resp)
	if err != nil {
		x.refused, x.why, x.repeats = sum, err.Error(), 0
		x.stats.Refused++
		x.stats.LastError = err.Error()
		x.svc.svc.configErrors.Add(1)
		x.log.Error("rate limit config from xDS refused: the one in force stays",
			"version", resp.GetVersionInfo(), "version_in_force", x.stats.Version, "err", err)
		return x.request(resp, err.Error()), 0
	}
	x.svc.SetConfig(cfg)
	x.accepted, x.refused, x.repeats = sum, [sha256.Size]byte{}, 0
	x.stats.Accepted++
	x.stats.Version = resp.GetVersionInfo()
	x.log.Info("rate limit config loaded from xDS", "version", x.stats.Version, "resources", len(resp.GetResources()),
		"domains", cfg.Domains(), "rules", cfg.Rules())
	return x.request(resp, ""), 0
}

// request answers resp: an acknowledgement when refusal is "", else a
// refusal saying why; either names the version in force. x.mu is held.
func (x *XDS) request(resp *discoverypb.DiscoveryResponse, refusal string) *discoverypb.DiscoveryRequest {
	req := &discoverypb.DiscoveryRequest{Node: x.node, TypeUrl: XDSTypeURL, ResponseNonce: resp.GetNonce(), VersionInfo: x.stats.Version}
	if refusal != "" {
		req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: refusal}
	}
	return req
}
