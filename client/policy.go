package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/calendar"
)

// ServerPolicy is a named limit kept by rlserver (RL.POLICY SET), so that
// applications say which limit applies to a key by name (Check) and an
// operator changes it for every client at once, without a deploy. Policies
// are replicated with the data, and every shard holds every one.
type ServerPolicy struct {
	// Name is how Check and All refer to the policy: 1 to 200 bytes.
	Name string
	// Rule is the limit: any rule but Throttle.
	Rule Rule
	// Shadow makes the policy allow every request while still counting,
	// and reporting in Decision.ShadowDenied, those it would have refused:
	// a way to try a limit on live traffic before enforcing it.
	Shadow bool
}

// PolicyInfo is a server policy as rlserver reports it.
type PolicyInfo struct {
	ServerPolicy
	// Definition is the policy as rlserver wrote it, what RL.POLICY SET
	// takes after the name: "SLIDING 100 60000", "QUOTA 1000 MONTH OFFSET
	// 180 SHADOW". ServerPolicy.Rule is read from it, and is nil when it
	// names an algorithm this package does not know (a newer rlserver).
	Definition string
	// Checks counts the decisions the policy made since it was last set,
	// Denied those it refused, ShadowDenied those a shadow policy would
	// have refused. They are statistics of the nodes that answered, not
	// replicated state, and restart when the policy changes. GetPolicy
	// fills them; ListPolicies leaves them 0.
	Checks, Denied, ShadowDenied int64
}

// SetPolicy defines or changes a server policy (RL.POLICY SET name
// ALGORITHM parameters... [SHADOW]). It takes effect at once for every key
// the policy is checked on; keys keep their state, converted to the new
// parameters as a call with them would (a new algorithm starts them
// afresh). Setting the same definition again keeps the counters; a new one
// restarts them.
func (c *Client) SetPolicy(ctx context.Context, p ServerPolicy) error {
	if p.Rule == nil {
		return fmt.Errorf("RL.POLICY SET %s: %w", p.Name, ErrNoRule)
	}
	word, params, ok := p.Rule.limit()
	if !ok {
		return fmt.Errorf("RL.POLICY SET %s: %T: %w", p.Name, p.Rule, ErrNotSupported)
	}
	args := append([]any{"RL.POLICY", "SET", p.Name, word}, params...)
	if p.Shadow {
		args = append(args, "SHADOW")
	}
	reply, err := c.doAt(ctx, 0, args...)
	if err != nil {
		return fmt.Errorf("RL.POLICY SET %s: %w", p.Name, err)
	}
	if reply != "OK" {
		return fmt.Errorf("RL.POLICY SET %s: %w: %v", p.Name, ErrUnexpectedReply, reply)
	}
	return nil
}

// GetPolicy reads a server policy's definition and counters (RL.POLICY
// GET). A name no policy has gives an error matching ErrNoSuchPolicy.
func (c *Client) GetPolicy(ctx context.Context, name string) (PolicyInfo, error) {
	reply, err := c.doAt(ctx, 0, "RL.POLICY", "GET", name)
	if errors.Is(err, redis.Nil) {
		return PolicyInfo{}, fmt.Errorf("RL.POLICY GET %s: %w", name, ErrNoSuchPolicy)
	}
	if err != nil {
		return PolicyInfo{}, fmt.Errorf("RL.POLICY GET %s: %w", name, err)
	}
	info, err := parsePolicyInfo(name, reply)
	if err != nil {
		return PolicyInfo{}, fmt.Errorf("RL.POLICY GET %s: %w", name, err)
	}
	return info, nil
}

// parsePolicyInfo reads RL.POLICY GET's reply: definition, shadow, checks,
// denied and shadow_denied, as a map (RESP3) or pairs (RESP2).
func parsePolicyInfo(name string, reply any) (PolicyInfo, error) {
	info := PolicyInfo{ServerPolicy: ServerPolicy{Name: name}}
	counters := map[string]*int64{"checks": &info.Checks, "denied": &info.Denied, "shadow_denied": &info.ShadowDenied}
	err := forEachPair(reply, func(k string, value any) error {
		if k == "definition" {
			s, ok := value.(string)
			if !ok {
				return fmt.Errorf("%w: definition is %T", ErrUnexpectedReply, value)
			}
			info.Definition = s
			return nil
		}
		if p := counters[k]; p != nil {
			n, ok := value.(int64)
			if !ok {
				return fmt.Errorf("%w: %s is %T", ErrUnexpectedReply, k, value)
			}
			*p = n
		}
		return nil // shadow is in the definition too; newer fields are skipped
	})
	if err != nil {
		return PolicyInfo{}, err
	}
	if info.Rule, info.Shadow, err = parseDefinition(info.Definition); err != nil {
		return PolicyInfo{}, err
	}
	return info, nil
}

// ListPolicies lists every server policy, by name (RL.POLICY LIST). The
// counters are left 0: LIST reports definitions only.
func (c *Client) ListPolicies(ctx context.Context) ([]PolicyInfo, error) {
	reply, err := c.doAt(ctx, 0, "RL.POLICY", "LIST")
	if err != nil {
		return nil, fmt.Errorf("RL.POLICY LIST: %w", err)
	}
	var list []PolicyInfo
	err = forEachPair(reply, func(name string, value any) error {
		def, ok := value.(string)
		if !ok {
			return fmt.Errorf("%w: the definition of %s is %T", ErrUnexpectedReply, name, value)
		}
		p := PolicyInfo{ServerPolicy: ServerPolicy{Name: name}, Definition: def}
		var err error
		p.Rule, p.Shadow, err = parseDefinition(def)
		list = append(list, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("RL.POLICY LIST: %w", err)
	}
	// RESP3's map arrives as a Go map, in no order.
	slices.SortFunc(list, func(a, b PolicyInfo) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// DeletePolicy deletes a server policy (RL.POLICY DEL) and reports whether
// it existed. Keys it limited keep their state until they expire; checking
// them against the deleted name gives ErrNoSuchPolicy.
func (c *Client) DeletePolicy(ctx context.Context, name string) (bool, error) {
	reply, err := c.doAt(ctx, 0, "RL.POLICY", "DEL", name)
	if err != nil {
		return false, fmt.Errorf("RL.POLICY DEL %s: %w", name, err)
	}
	n, ok := reply.(int64)
	if !ok {
		return false, fmt.Errorf("RL.POLICY DEL %s: %w: %T", name, ErrUnexpectedReply, reply)
	}
	return n == 1, nil
}

// Check asks whether key may spend cost units under the server policy
// named policy (RL.CHECK), as AllowN does under a Rule: all or nothing, 0
// a peek, negative a refund. A shadow policy always allows, and sets
// ShadowDenied when it would not have; a Shape policy sets Delay. A name no
// policy has gives an error matching ErrNoSuchPolicy.
func (c *Client) Check(ctx context.Context, key, policy string, cost int64) (Decision, error) {
	_, d, err := c.check(ctx, key, policy, cost, false)
	return d, err
}

// CheckPartial is Check with PARTIAL: it spends what is available of n
// units and returns how many were granted, as AllowPartial does.
func (c *Client) CheckPartial(ctx context.Context, key, policy string, n int64) (granted int64, d Decision, err error) {
	return c.check(ctx, key, policy, n, true)
}

func (c *Client) check(ctx context.Context, key, policy string, cost int64, partial bool) (int64, Decision, error) {
	args := []any{"RL.CHECK", key, policy, "COST", cost}
	if partial {
		args = append(args, "PARTIAL")
	}
	reply, err := c.do(ctx, args...)
	if err != nil {
		return 0, Decision{}, fmt.Errorf("RL.CHECK %s %s: %w", key, policy, policyError(err))
	}
	r, err := readDecision(reply)
	if err == nil {
		err = c.nameCheckExtras(&r, partial)
	}
	if err != nil {
		return 0, Decision{}, fmt.Errorf("RL.CHECK %s %s: %w", key, policy, err)
	}
	return r.extras[extraGranted], r.decision(), nil
}

// nameCheckExtras names the extra fields of a policy's decision. In RESP2
// they come in the order granted (with PARTIAL), delay_ms (a Shape policy),
// shadow_denied (every RL.CHECK), so their count tells what they are; RESP3
// names its fields.
func (c *Client) nameCheckExtras(r *decisionReply, partial bool) error {
	var names []string
	if partial {
		names = append(names, extraGranted)
	}
	if r.resp3 {
		return r.name(names...)
	}
	if len(r.bare)-len(names) == 2 {
		names = append(names, extraDelay)
	}
	return r.name(append(names, extraShadowDenied)...)
}

// noSuchPolicy begins the error rlserver answers RL.CHECK and RL.ALL with
// when a policy does not exist. It has no code of its own (it is an ERR),
// so the text is what tells it apart.
const noSuchPolicy = "ERR no such policy"

// policyError adds ErrNoSuchPolicy to an error reply saying so, keeping the
// reply itself for errors.As.
func policyError(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) && strings.HasPrefix(reply.Error(), noSuchPolicy) {
		return fmt.Errorf("%w: %w", ErrNoSuchPolicy, err)
	}
	return err
}

// parseDefinition reads a policy's definition as rlserver writes it (see
// PolicyInfo.Definition) into its Rule and shadow flag. An algorithm this
// package does not know gives a nil Rule, not an error, so that one policy
// of a newer rlserver does not make the others unreadable.
func parseDefinition(def string) (Rule, bool, error) {
	words := strings.Fields(def)
	shadow := false
	if n := len(words); n > 1 && words[n-1] == "SHADOW" {
		shadow, words = true, words[:n-1]
	}
	bad := func() (Rule, bool, error) {
		return nil, false, fmt.Errorf("%w: policy definition %q", ErrUnexpectedReply, def)
	}
	if len(words) == 0 {
		return bad()
	}
	// ints reads the words at the given positions, all integers.
	ints := func(at ...int) ([]int64, bool) {
		v := make([]int64, len(at))
		for i, a := range at {
			n, err := strconv.ParseInt(words[a], 10, 64)
			if err != nil {
				return nil, false
			}
			v[i] = n
		}
		return v, true
	}
	switch words[0] {
	case "SLIDING", "FIXED", "LOG":
		if len(words) != 3 {
			return bad()
		}
		v, ok := ints(1, 2)
		if !ok {
			return bad()
		}
		w := msToDuration(v[1])
		switch words[0] {
		case "SLIDING":
			return SlidingWindow{Limit: v[0], Window: w}, shadow, nil
		case "FIXED":
			return FixedWindow{Limit: v[0], Window: w}, shadow, nil
		}
		return SlidingLog{Limit: v[0], Window: w}, shadow, nil
	case "TOKEN", "LEAKY", "GCRA", wordShape:
		if len(words) != 4 {
			return bad()
		}
		v, ok := ints(1, 2, 3)
		if !ok {
			return bad()
		}
		every := msToDuration(v[2])
		switch words[0] {
		case "TOKEN":
			return TokenBucket{Capacity: v[0], RefillTokens: v[1], RefillEvery: every}, shadow, nil
		case "LEAKY":
			return LeakyBucket{Capacity: v[0], LeakTokens: v[1], LeakEvery: every}, shadow, nil
		case "GCRA":
			return GCRA{Burst: v[0], Count: v[1], Period: every}, shadow, nil
		}
		return Shape{Capacity: v[0], LeakTokens: v[1], LeakEvery: every}, shadow, nil
	case "QUOTA":
		return parseQuotaDefinition(words, shadow, bad)
	}
	return nil, shadow, nil
}

// parseQuotaDefinition reads "QUOTA limit PERIOD [OFFSET minutes]".
func parseQuotaDefinition(words []string, shadow bool, bad func() (Rule, bool, error)) (Rule, bool, error) {
	if len(words) != 3 && (len(words) != 5 || words[3] != "OFFSET") {
		return bad()
	}
	limit, err := strconv.ParseInt(words[1], 10, 64)
	if err != nil {
		return bad()
	}
	period, ok := calendar.Parse(words[2])
	if !ok {
		return bad()
	}
	q := Quota{Limit: limit, Period: period}
	if len(words) == 5 {
		m, err := strconv.ParseInt(words[4], 10, 64)
		if err != nil {
			return bad()
		}
		q.Offset = time.Duration(m) * time.Minute
	}
	return q, shadow, nil
}
