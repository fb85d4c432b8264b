package rls

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// A RateLimitConfig resource (ratelimit.config.ratelimit.v3, what Envoy
// Gateway's control plane sends) is one domain with its descriptors, as a
// YAML file is. LoadXDS makes each resource into the YAML nodes the file
// would hold and checks them with the file's own checks (yaml.go), so that
// both sources give the same tree, the same rules and the same refusals;
// a fault is named by the resource and the path of the field in it
// ("RateLimitConfig "edge" at descriptors[0].rate_limit") instead of a
// file and line. Several resources are several domains, refused when two
// define the same one (as envoyproxy/ratelimit without
// MERGE_DOMAIN_CONFIG).
//
// The proto has no presence for its scalars, so a field at its zero value
// is taken as absent: no value, no unit (UNKNOWN), not unlimited, not in
// shadow mode. Its metadata is not read.

// LoadXDS builds a Config from RateLimitConfig resources, in the order
// given. Every fault is a *ConfigError naming the resource and the field.
func LoadXDS(resources []*rlsconf.RateLimitConfig) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	seen := map[string]string{}
	for _, res := range resources {
		b := &xdsNodes{resource: res.GetName(), paths: map[*yaml.Node]string{}}
		root := b.config(res)
		p := &fileParser{file: b.where(""), place: b.place, earlier: b.earlier}
		d, err := p.domainTree(root, "a RateLimitConfig")
		if err != nil {
			return nil, err
		}
		if err := c.add(d, seen); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// xdsNodes makes one resource into YAML nodes, remembering each node's path
// in the resource for the messages.
type xdsNodes struct {
	resource string
	paths    map[*yaml.Node]string
}

// where names a path in the resource.
func (b *xdsNodes) where(path string) string {
	if path == "" {
		return fmt.Sprintf("RateLimitConfig %q", b.resource)
	}
	return fmt.Sprintf("RateLimitConfig %q at %s", b.resource, path)
}

// place is the fileParser's place of a node made here.
func (b *xdsNodes) place(n *yaml.Node) string { return b.where(b.paths[n]) }

// earlier is the fileParser's name for an earlier node.
func (b *xdsNodes) earlier(n *yaml.Node) string { return "at " + b.paths[n] }

// config is a resource's root mapping: domain and descriptors.
func (b *xdsNodes) config(res *rlsconf.RateLimitConfig) *yaml.Node {
	root := b.mapping("")
	b.set(root, "", "domain", b.scalar("domain", res.GetDomain()))
	if len(res.GetDescriptors()) > 0 {
		b.set(root, "", "descriptors", b.descriptors("descriptors", res.GetDescriptors()))
	}
	return root
}

// descriptors is a list of descriptors at path.
func (b *xdsNodes) descriptors(path string, list []*rlsconf.RateLimitDescriptor) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	b.paths[seq] = path
	for i, d := range list {
		seq.Content = append(seq.Content, b.descriptor(path+"["+strconv.Itoa(i)+"]", d))
	}
	return seq
}

// descriptor is one descriptor at path: the fields a YAML descriptor has.
func (b *xdsNodes) descriptor(path string, d *rlsconf.RateLimitDescriptor) *yaml.Node {
	m := b.mapping(path)
	b.set(m, path, "key", b.scalar(path+".key", d.GetKey()))
	if d.GetValue() != "" {
		b.set(m, path, "value", b.scalar(path+".value", d.GetValue()))
	}
	if rl := d.GetRateLimit(); rl != nil {
		b.set(m, path, "rate_limit", b.rateLimit(path+".rate_limit", rl))
	}
	for _, f := range []struct {
		name string
		on   bool
	}{{"shadow_mode", d.GetShadowMode()}, {"detailed_metric", d.GetDetailedMetric()}, {"quota_mode", d.GetQuotaMode()}} {
		if f.on {
			b.set(m, path, f.name, b.scalar(path+"."+f.name, "true"))
		}
	}
	if len(d.GetDescriptors()) > 0 {
		b.set(m, path, "descriptors", b.descriptors(path+".descriptors", d.GetDescriptors()))
	}
	return m
}

// rateLimit is a descriptor's rate_limit at path. The unit is the enum's
// name in lower case (UNKNOWN: none; a number the enum does not name is
// given as the number, which the checks refuse).
func (b *xdsNodes) rateLimit(path string, rl *rlsconf.RateLimitPolicy) *yaml.Node {
	m := b.mapping(path)
	if rl.GetUnit() != rlsconf.RateLimitUnit_UNKNOWN {
		b.set(m, path, "unit", b.scalar(path+".unit", strings.ToLower(rl.GetUnit().String())))
	}
	b.set(m, path, "requests_per_unit", b.scalar(path+".requests_per_unit", strconv.FormatUint(uint64(rl.GetRequestsPerUnit()), 10)))
	if rl.GetUnlimited() {
		b.set(m, path, "unlimited", b.scalar(path+".unlimited", "true"))
	}
	if rl.GetName() != "" {
		b.set(m, path, "name", b.scalar(path+".name", rl.GetName()))
	}
	if len(rl.GetReplaces()) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		b.paths[seq] = path + ".replaces"
		for i, r := range rl.GetReplaces() {
			at := path + ".replaces[" + strconv.Itoa(i) + "]"
			item := b.mapping(at)
			b.set(item, at, "name", b.scalar(at+".name", r.GetName()))
			seq.Content = append(seq.Content, item)
		}
		b.set(m, path, "replaces", seq)
	}
	return m
}

// mapping is an empty mapping node at path.
func (b *xdsNodes) mapping(path string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	b.paths[n] = path
	return n
}

// scalar is a string node at path.
func (b *xdsNodes) scalar(path, v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	b.paths[n] = path
	return n
}

// set adds key: value to the mapping m at path; the key node is named by
// the field's path.
func (b *xdsNodes) set(m *yaml.Node, path, key string, value *yaml.Node) {
	at := key
	if path != "" {
		at = path + "." + key
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	b.paths[k] = at
	m.Content = append(m.Content, k, value)
}

// resourceTypeURL is a resource wrapped in envoy.service.discovery.v3.Resource
// (a control plane that gives resources a time to live sends them so).
const resourceTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// errXDSResource is what decodeXDS's errors about a resource's encoding
// wrap (its checks' are *ConfigError).
var errXDSResource = errors.New("invalid xDS resource")

// decodeXDS reads a response's resources and loads them.
func decodeXDS(resp *discoverypb.DiscoveryResponse) (*Config, error) {
	if resp.GetTypeUrl() != XDSTypeURL {
		return nil, fmt.Errorf("%w: a response of type %s, not %s", errXDSResource, resp.GetTypeUrl(), XDSTypeURL)
	}
	list := make([]*rlsconf.RateLimitConfig, 0, len(resp.GetResources()))
	for i, a := range resp.GetResources() {
		if a.GetTypeUrl() == resourceTypeURL {
			var wrapped discoverypb.Resource
			if err := a.UnmarshalTo(&wrapped); err != nil {
				return nil, fmt.Errorf("%w: resource %d: %w", errXDSResource, i, err)
			}
			if a = wrapped.GetResource(); a == nil {
				return nil, fmt.Errorf("%w: resource %d (%q) has no body: time-to-live heartbeats are not supported", errXDSResource, i, wrapped.GetName())
			}
		}
		if a.GetTypeUrl() != XDSTypeURL {
			return nil, fmt.Errorf("%w: resource %d is a %s, not a %s", errXDSResource, i, a.GetTypeUrl(), XDSTypeURL)
		}
		c := &rlsconf.RateLimitConfig{}
		if err := anypb.UnmarshalTo(a, c, proto.UnmarshalOptions{}); err != nil {
			return nil, fmt.Errorf("%w: resource %d: %w", errXDSResource, i, err)
		}
		list = append(list, c)
	}
	return LoadXDS(list)
}

// fingerprintResources hashes a response's type and resources, to know a
// set sent again.
func fingerprintResources(resp *discoverypb.DiscoveryResponse) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(resp.GetTypeUrl()))
	for _, a := range resp.GetResources() {
		h.Write([]byte{0})
		h.Write([]byte(a.GetTypeUrl()))
		h.Write([]byte{0})
		h.Write(a.GetValue())
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
