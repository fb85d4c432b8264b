package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
	"github.com/rlserver/rlserver/internal/wire"
)

// A Raft entry carries one batch: every command of every request the
// proposer packed, after the time the leader stamped on it.
//
//	version  byte     1, 2 or 3
//	now      varint   the leader's clock: Unix ms, in version 3 Unix µs
//	count    uvarint  commands
//	commands          version 1: op byte, key (uvarint length, bytes), four varint args
//	                  versions 2 and 3: op byte, flags uvarint, key, value (as the key), four varint args
//
// A batch whose commands have no flags and no value is written as version 1,
// which nodes that predate version 2 can still apply: a cluster upgraded
// node by node keeps working until the new commands are used. Only a
// script sees a time finer than a millisecond (TIME inside it), so only a
// batch that holds one is written as version 3, with the microseconds;
// such a batch needs a node of script runtime 2 anyway. A command with a flag its op does not take in a release (FORCE, GLOBAL
// were added so) halts that release's replicas (ErrNewerEntry), as an op
// it does not know does, rather than being skipped while the others apply
// it.
//
// Forwarding between nodes sends commands in the same form, and results in
// the form of appendResult.

const (
	entryVersion1 = 1
	entryVersion2 = 2
	entryVersion3 = 3
)

// entryVersion is the version a batch holding c needs at least.
func entryVersion(c *engine.Command) byte {
	switch {
	case c.Op == engine.OpEval:
		return entryVersion3
	case c.Flags != 0 || len(c.Value) > 0:
		return entryVersion2
	}
	return entryVersion1
}

// maxWireKey bounds a key decoded from an entry or a peer.
const maxWireKey = 1 << 20

// errBadEntry reports bytes that do not decode to a valid batch.
var errBadEntry = errors.New("malformed batch")

// ErrNewerEntry reports an entry of a version, or with an op, that only a
// newer rlserver knows. A replica must not skip it, as it skips a malformed
// one that every replica refuses alike: the others apply it, and the state
// would diverge. The replica halts instead (see RaftShards.Halted).
var ErrNewerEntry = errors.New("a Raft entry written by a newer rlserver: upgrade this node")

// appendBatch encodes the commands of reqs, stamped with us (Unix µs).
func appendBatch(b []byte, us int64, reqs []*Request) []byte {
	n, size := 0, 1+2*binary.MaxVarintLen64 // the header at its longest
	version := byte(entryVersion1)
	for _, r := range reqs {
		n += len(r.Cmds)
		for i := range r.Cmds {
			version = max(version, entryVersion(&r.Cmds[i]))
			size += commandSize(&r.Cmds[i])
		}
	}
	if cap(b)-len(b) < size { // one allocation an entry, not one a doubling
		b = append(make([]byte, 0, len(b)+size), b...)
	}
	b = append(b, version)
	if version == entryVersion3 {
		b = binary.AppendVarint(b, us)
	} else {
		b = binary.AppendVarint(b, us/1000) // times are positive: the division rounds down
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, r := range reqs {
		for i := range r.Cmds {
			b = appendCommand(b, &r.Cmds[i], version)
		}
	}
	return b
}

// commandSize is at least what appendCommand writes for c, at any version
// (the flags and value of version 2 counted even when absent: two bytes).
func commandSize(c *engine.Command) int {
	size := 1 + uvarintLen(uint64(len(c.Key))) + len(c.Key) +
		uvarintLen(uint64(c.Flags)) + uvarintLen(uint64(len(c.Value))) + len(c.Value)
	for _, a := range c.Args {
		size += uvarintLen(uint64(a<<1) ^ uint64(a>>63)) // as AppendVarint zigzags it
	}
	return size
}

// uvarintLen is how many bytes binary.AppendUvarint writes for x.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func appendCommand(b []byte, c *engine.Command, version byte) []byte {
	b = append(b, byte(c.Op))
	if version >= entryVersion2 {
		b = binary.AppendUvarint(b, uint64(c.Flags))
	}
	b = binary.AppendUvarint(b, uint64(len(c.Key)))
	b = append(b, c.Key...)
	if version >= entryVersion2 {
		b = binary.AppendUvarint(b, uint64(len(c.Value)))
		b = append(b, c.Value...)
	}
	for _, a := range c.Args {
		b = binary.AppendVarint(b, a)
	}
	return b
}

// decodeBatch decodes a batch into cmds (reusing its memory), and returns
// its time in Unix µs; the keys alias data. Every command is checked with
// engine.Command.Valid.
func decodeBatch(data []byte, cmds []engine.Command) (int64, []engine.Command, error) {
	d := newReader(data)
	version := d.Byte()
	if version > entryVersion3 {
		return 0, cmds, fmt.Errorf("%w (entry version %d)", ErrNewerEntry, version)
	}
	if version < entryVersion1 {
		return 0, cmds, fmt.Errorf("%w: unknown version", errBadEntry)
	}
	now := d.Varint()
	n := d.Uvarint()
	if n > uint64(len(data)) {
		return 0, cmds, fmt.Errorf("%w: %d commands", errBadEntry, n)
	}
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		c := engine.Command{Op: engine.Op(d.Byte())}
		if version >= entryVersion2 {
			flags := d.Uvarint()
			c.Flags = engine.Flags(flags)
			if uint64(c.Flags) != flags || c.Known() && c.Flags&^c.Op.Spec().Flags != 0 {
				// A flag this release's op does not take is one a newer
				// release gave it (FORCE, GLOBAL): halting until upgraded
				// keeps this replica from applying the command otherwise.
				d.FailWith(fmt.Errorf("%w (op %d, flags %#x)", ErrNewerEntry, c.Op, flags))
			}
		}
		c.Key = d.Bytes(maxWireKey)
		if version >= entryVersion2 {
			if c.Value = d.Bytes(engine.MaxValue); len(c.Value) == 0 {
				c.Value = nil
			}
		}
		for j := range c.Args {
			c.Args[j] = d.Varint()
		}
		if !c.Known() {
			d.FailWith(fmt.Errorf("%w (op %d)", ErrNewerEntry, c.Op))
		}
		if !c.Valid() {
			d.FailWith(fmt.Errorf("%w: invalid command %d", errBadEntry, c.Op))
		}
		cmds = append(cmds, c)
	}
	if d.Len() > 0 {
		d.FailWith(fmt.Errorf("%w: trailing bytes", errBadEntry))
	}
	us := now * 1000
	if version == entryVersion3 {
		us, now = now, now/1000
	}
	if now < 0 || now > engine.MaxTime {
		d.FailWith(fmt.Errorf("%w: time %d", errBadEntry, now))
	}
	return us, cmds, d.Err()
}

// appendResult encodes one result for a forwarded request.
func appendResult(b []byte, r *engine.Result) []byte {
	b = append(b, byte(r.Type))
	switch r.Type {
	case engine.ResDecision:
		d := r.Decision
		b = wire.AppendBool(b, d.Allowed)
		b = wire.AppendVarints(b, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
		b = append(b, r.NExtras)
		for _, e := range r.Extras[:r.NExtras] {
			b = wire.AppendString(b, e.Name)
			b = binary.AppendVarint(b, e.Value)
		}
		b = binary.AppendUvarint(b, uint64(r.Members))
	case engine.ResThrottle:
		t := r.Throttle
		b = wire.AppendBool(b, t.Limited)
		b = wire.AppendVarints(b, t.Limit, t.Remaining, t.RetryAfter, t.ResetAfter)
	case engine.ResInt, engine.ResIntBulk:
		b = binary.AppendVarint(b, r.Int)
	case engine.ResText, engine.ResBulk:
		b = wire.AppendString(b, r.Text)
	case engine.ResValues:
		// As RESP3 text, the form of the releases before values: every
		// release reads it. Written in place, then moved up by its
		// length's uvarint, which goes in front.
		start := len(b)
		b = resp.AppendValues(b, r.Values, true)
		var head [binary.MaxVarintLen64]byte
		h := binary.PutUvarint(head[:], uint64(len(b)-start))
		b = append(b, head[:h]...)
		copy(b[start+h:], b[start:len(b)-h])
		copy(b[start:], head[:h])
	case engine.ResFields, engine.ResRecord:
		b = binary.AppendUvarint(b, uint64(len(r.Fields)))
		for _, f := range r.Fields {
			b = wire.AppendString(b, f.Name)
			b = wire.AppendString(b, f.Text)
			b = binary.AppendVarint(b, f.Int)
		}
	case engine.ResError:
		b = appendError(b[:len(b)-1], wireResultError, r.Err)
		b = binary.AppendUvarint(b, uint64(r.Members))
	}
	return b
}

// decodeResult decodes one appendResult encoding.
func (d *reader) result() engine.Result {
	r := engine.Result{Type: engine.ResultType(d.Byte())}
	switch r.Type {
	case engine.ResDecision:
		r.Decision.Allowed = d.Bool()
		r.Decision.Limit, r.Decision.Remaining, r.Decision.RetryAfter, r.Decision.ResetAfter = d.Varint(), d.Varint(), d.Varint(), d.Varint()
		if r.NExtras = d.Byte(); int(r.NExtras) > len(r.Extras) {
			d.Fail("too many extras")
			return r
		}
		for i := range r.Extras[:r.NExtras] {
			r.Extras[i] = engine.Extra{Name: extraName(d.Bytes(64)), Value: d.Varint()}
		}
		r.Members = d.members()
	case engine.ResThrottle:
		r.Throttle.Limited = d.Bool()
		r.Throttle.Limit, r.Throttle.Remaining, r.Throttle.RetryAfter, r.Throttle.ResetAfter = d.Varint(), d.Varint(), d.Varint(), d.Varint()
	case engine.ResInt, engine.ResIntBulk:
		r.Int = d.Varint()
	case engine.ResText, engine.ResBulk:
		r.Text = string(d.Bytes(engine.MaxValue))
	case engine.ResValues: // RESP3 text; the values' strings share one copy of it
		text := string(d.Bytes(engine.MaxValue))
		if d.Err() != nil {
			return r
		}
		var err error
		if r.Values, _, err = resp.Parse(nil, text); err != nil {
			d.Fail("bad reply")
		}
	case engine.ResFields, engine.ResRecord:
		n := d.Uvarint()
		if n > 64 {
			d.Fail("too many fields")
			return r
		}
		r.Fields = make([]engine.Field, n)
		for i := range r.Fields {
			r.Fields[i] = engine.Field{Name: string(d.Bytes(256)), Text: string(d.Bytes(256)), Int: d.Varint()}
		}
	case engine.ResultType(wireResultError):
		r.Type, r.Err = engine.ResError, d.error()
		r.Members = d.members()
	case engine.ResOK, engine.ResNil, engine.ResNilArray:
	default:
		d.Fail("unknown result type")
	}
	return r
}

// members reads an RL.ALL head's count of limits.
func (d *reader) members() int {
	n := d.Uvarint()
	if n > engine.MaxAllLimits {
		d.Fail("too many members")
		return 0
	}
	return int(n)
}

// extraNames are the names of the extra fields of a decision, so that a
// forwarded result does not allocate them.
var extraNames = []string{"granted", "delay_ms", "lease_id", "shadow_denied", engine.ExtraReservation}

func extraName(b []byte) string {
	for _, n := range extraNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

// An error crosses the bus as its identity, never as a text to match: a
// tag, then
//
//	errEngine        code byte, message: an engine error, rebuilt with its
//	                 code (errors.Is compares codes)
//	errNotApplied, errMayHaveBeenCounted, errShuttingDown: nothing more
//	errFailure       message: any other error, a Failure
//	errMembership    code byte, message: a MembershipError
//
// A result that is an error has its own result tag (wireResultError), and
// so does a request that failed as a whole (see forward.go).
const (
	errFailure byte = iota
	errEngine
	errNotApplied
	errMayHaveBeenCounted
	errShuttingDown
	errMembership

	// wireResultError tags a result that is an error, outside engine's
	// ResultType values.
	wireResultError = 0x80
	// maxWireError bounds an error's message.
	maxWireError = 4096
)

// appendError appends tag, then err's identity.
func appendError(b []byte, tag byte, err error) []byte {
	b = append(b, tag)
	var e *engine.Error
	var me *MembershipError
	switch {
	case errors.As(err, &e):
		return wire.AppendString(append(b, errEngine, byte(e.Code)), err.Error())
	case errors.As(err, &me):
		return wire.AppendString(append(b, errMembership, byte(me.Code)), err.Error())
	case errors.Is(err, ErrNotApplied):
		return append(b, errNotApplied)
	case errors.Is(err, ErrMayHaveBeenCounted):
		return append(b, errMayHaveBeenCounted)
	case errors.Is(err, ErrShuttingDown):
		return append(b, errShuttingDown)
	}
	return wire.AppendString(append(b, errFailure), err.Error())
}

// appendRequestError appends the error a forwarded request ended with as
// a whole (replyError, then appendError's encoding of err) and, when that
// encoding is a sentinel's kind alone, err's text after it: why, in the
// answering node's words. The text ends the reply.
func appendRequestError(b []byte, err error) []byte {
	start := len(b)
	b = appendError(b, replyError, err)
	if len(b) == start+2 { // tag and kind: a sentinel, sent bare
		text := err.Error()
		b = append(b, text[:min(len(text), maxWireError)]...)
	}
	return b
}

// requestError reads what appendRequestError wrote after the tag: a
// sentinel that came with its text is a ForwardedError from peer.
func (d *reader) requestError(peer string) error {
	err := d.error()
	if d.Err() != nil || d.Len() == 0 {
		return err
	}
	if !errors.Is(err, ErrNotApplied) && !errors.Is(err, ErrMayHaveBeenCounted) && !errors.Is(err, ErrShuttingDown) {
		return err
	}
	text := string(d.Rest()[:min(d.Len(), maxWireError)])
	d.Next(d.Len())
	return &ForwardedError{Peer: peer, Text: text, Err: err}
}

// error reads what appendError wrote after the tag.
func (d *reader) error() error {
	switch kind := d.Byte(); kind {
	case errEngine:
		// A code only a newer rlserver knows keeps its message; the
		// server answers it as it answers every code it has no word for.
		code := engine.Code(d.Byte())
		return &engine.Error{Code: code, Msg: string(d.Bytes(maxWireError))}
	case errNotApplied:
		return ErrNotApplied
	case errMayHaveBeenCounted:
		return ErrMayHaveBeenCounted
	case errShuttingDown:
		return ErrShuttingDown
	case errFailure:
		return &Failure{string(d.Bytes(maxWireError))}
	case errMembership:
		code := MembershipCode(d.Byte())
		return &MembershipError{Code: code, Msg: string(d.Bytes(maxWireError))}
	default:
		d.Fail("unknown error kind")
		return errBadEntry
	}
}

// reader reads the encodings above: a wire.Reader whose errors wrap
// errBadEntry, with the decoders of the cluster's own values (result,
// members, error, requestError).
type reader struct{ wire.Reader }

func newReader(b []byte) *reader { return &reader{wire.NewReader(b, errBadEntry)} }
