package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

func TestBatchRoundTripKeepsFlagsAndValues(t *testing.T) {
	cmds := []engine.Command{
		{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{100, 60_000, 0, -3}, Flags: engine.FlagPartial},
		{Op: engine.OpSet, Key: []byte("s"), Value: []byte("hello"), Flags: engine.FlagNX | engine.FlagGet, Args: [4]int64{5000, engine.ExpiryRelative}},
		{Op: engine.OpCheck, Key: []byte("user:ada"), Value: []byte("orders"), Args: [4]int64{3: 1}},
		shareCommand("api", "envoy-1", 700, 42),
		{Op: engine.OpUnshare, Key: []byte("api"), Value: []byte("envoy-2")},
		{Op: engine.OpWatch, Key: []byte("w"), Value: bytes.Repeat([]byte{0xfe}, engine.FingerprintLen), Args: [4]int64{engine.WatchGuard, 2}},
		{Op: engine.OpWatch, Key: []byte("w"), Args: [4]int64{engine.WatchRead}},
	}
	data := appendBatch(nil, 1_700_000_000_000, []*Request{{Cmds: cmds}})
	if data[0] != entryVersion2 {
		t.Fatalf("version %d, want 2 for commands with flags or values", data[0])
	}
	now, got, err := decodeBatch(data, nil)
	if err != nil || now != 1_700_000_000_000 || len(got) != len(cmds) {
		t.Fatalf("decode: %v, %d, %d commands", err, now, len(got))
	}
	for i := range cmds {
		a, b := cmds[i], got[i]
		if a.Op != b.Op || a.Flags != b.Flags || a.Args != b.Args || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
			t.Fatalf("command %d: %+v, want %+v", i, b, a)
		}
	}
}

// A FORCE charge is written as version 2 and crosses the log whole. A
// replica of a release before FORCE halts on it, as on any flag its op
// does not take (TestDecodeHaltsOnFlagsOfANewerRelease).
func TestForceBatchesRoundTrip(t *testing.T) {
	cmds := []engine.Command{
		{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{100, 60_000, 0, 1}},
		{Op: engine.OpToken, Key: []byte("t"), Args: [4]int64{1000, 1000, 60_000, 1200}, Flags: engine.FlagForce},
		{Op: engine.OpCheck, Key: []byte("user:ada"), Value: []byte("orders"), Args: [4]int64{3: 5}, Flags: engine.FlagForce},
	}
	data := appendBatch(nil, 1_700_000_000_000_000, []*Request{{Cmds: cmds}})
	if data[0] != entryVersion2 {
		t.Fatalf("version %d, want 2", data[0])
	}
	_, got, err := decodeBatch(data, nil)
	if err != nil || len(got) != len(cmds) {
		t.Fatalf("decode: %v, %d commands", err, len(got))
	}
	for i := range cmds {
		if a, b := cmds[i], got[i]; a.Op != b.Op || a.Flags != b.Flags || a.Args != b.Args || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
			t.Fatalf("command %d: %+v, want %+v", i, b, a)
		}
	}
}

// Batches of the commands version 1 knows stay in version 1, byte for byte,
// so nodes not yet upgraded apply what upgraded leaders propose.
func TestPlainBatchesStayVersionOne(t *testing.T) {
	cmds := []engine.Command{{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{100, 60_000, 0, 1}}}
	data := appendBatch(nil, 5_000, []*Request{{Cmds: cmds}}) // 5 ms
	want := []byte{1, 10, 1, byte(engine.OpSliding), 1, 'k', 200, 1, 192, 169, 7, 0, 2}
	if !bytes.Equal(data, want) {
		t.Fatalf("encoding % x, want % x", data, want)
	}
	if _, _, err := decodeBatch(data, nil); err != nil {
		t.Fatal(err)
	}
}

// A batch that holds a script carries the leader's microseconds (version
// 3), which the script's TIME shows; the others keep their version and
// their milliseconds, and decode to microseconds alike.
func TestScriptBatchesCarryMicroseconds(t *testing.T) {
	script := engine.Command{Op: engine.OpEval, Value: engine.Pack([][]byte{[]byte("return 1")}), Args: [4]int64{engine.ScriptRuntime, 0}}
	plain := engine.Command{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{100, 60_000, 0, 1}}
	for _, tt := range []struct {
		cmds    []engine.Command
		version byte
		want    int64
	}{
		{[]engine.Command{plain, script}, entryVersion3, 1_700_000_000_123_456},
		{[]engine.Command{plain}, entryVersion1, 1_700_000_000_123_000},
	} {
		data := appendBatch(nil, 1_700_000_000_123_456, []*Request{{Cmds: tt.cmds}})
		us, got, err := decodeBatch(data, nil)
		if data[0] != tt.version || err != nil || us != tt.want || len(got) != len(tt.cmds) {
			t.Errorf("version %d, decoded %d µs, %d commands, %v; want version %d, %d µs", data[0], us, len(got), err, tt.version, tt.want)
		}
	}
	bad := appendBatch(nil, (engine.MaxTime+1)*1000, []*Request{{Cmds: []engine.Command{script}}})
	if _, _, err := decodeBatch(bad, nil); !errors.Is(err, errBadEntry) {
		t.Errorf("a time past MaxTime: %v", err)
	}
}

// The stamper stamps the clock's microseconds, but past the scripts of the
// batch before while the clock stays within its millisecond.
func TestStamperMovesPastScripts(t *testing.T) {
	var s stamper
	for _, tt := range []struct{ clock, scripts, want int64 }{
		{1_000_500, 2, 1_000_500},
		{1_000_500, 1, 1_000_502}, // the clock has not moved: past the two scripts
		{1_000_501, 0, 1_000_503},
		{1_000_990, 30, 1_000_990},
		{1_000_991, 1, 1_000_999}, // never past the clock's millisecond
		{1_001_000, 0, 1_001_000},
		{999_000, 1, 999_000}, // a clock that went back is the engine's to hold
	} {
		if got := s.stamp(tt.clock, tt.scripts); got != tt.want {
			t.Errorf("stamp(%d, %d) = %d, want %d", tt.clock, tt.scripts, got, tt.want)
		}
	}
}

func TestDecodeRefusesInvalidCommands(t *testing.T) {
	for _, c := range []engine.Command{
		{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{0, 60_000, 0, 1}},                          // zero limit
		{Op: engine.OpThrottle, Key: []byte("k"), Args: [4]int64{1, 1, 1, -1}},                             // refund on CL.THROTTLE
		{Op: engine.OpPolicySet, Value: []byte("p"), Args: [4]int64{1, 1000, 0, int64(engine.OpThrottle)}}, // not a policy algorithm
		{Op: engine.OpCheck, Key: []byte("k"), Args: [4]int64{3: 1}},                                       // no policy name
		shareCommand("k", "", 1, 0), // no holder
		{Op: engine.OpShare, Key: []byte("k"), Value: []byte("h"), Args: [4]int64{5, 1000, 1, -1}}, // a bare holder
		{Op: engine.OpUnshare, Key: []byte("k")},                                                   // no holder
	} {
		data := appendBatch(nil, 5_000, []*Request{{Cmds: []engine.Command{c}}})
		if _, _, err := decodeBatch(data, nil); !errors.Is(err, errBadEntry) {
			t.Errorf("%+v decoded: %v", c, err)
		}
	}
}

// A flag a known op does not take in this release is one a newer release
// gave it: the replica halts until upgraded (ErrNewerEntry) rather than
// skip the command or apply it without the flag, and so diverge.
func TestDecodeHaltsOnFlagsOfANewerRelease(t *testing.T) {
	for _, flags := range []engine.Flags{engine.FlagPartial, 1 << 15} {
		c := engine.Command{Op: engine.OpSet, Key: []byte("k"), Flags: flags}
		data := appendBatch(nil, 5_000, []*Request{{Cmds: []engine.Command{c}}})
		if _, _, err := decodeBatch(data, nil); !errors.Is(err, ErrNewerEntry) {
			t.Errorf("SET with flags %#x: %v, want ErrNewerEntry", flags, err)
		}
	}
	// PARTIAL (1), so that the entry carries flags; then 1 | 1<<16.
	c := engine.Command{Op: engine.OpSliding, Flags: engine.FlagPartial, Key: []byte("k"), Args: [4]int64{10, 60_000, 0, 1}}
	data := appendBatch(nil, 5_000, []*Request{{Cmds: []engine.Command{c}}})
	flagsAt := bytes.Index(data, []byte{byte(engine.OpSliding), 1, 1, 'k'}) + 1
	if flagsAt == 0 {
		t.Fatalf("no RL.SLIDING command in %x", data)
	}
	wide := append(append(append([]byte{}, data[:flagsAt]...), 0x81, 0x80, 0x04), data[flagsAt+1:]...)
	if _, _, err := decodeBatch(wide, nil); !errors.Is(err, ErrNewerEntry) {
		t.Errorf("flags past 16 bits: %v, want ErrNewerEntry", err)
	}
}

func TestResultRoundTripKeepsExtrasAndMembers(t *testing.T) {
	r := engine.Result{Type: engine.ResDecision, Decision: engine.Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAfter: 900}, Members: 3}
	r.Extras[0], r.NExtras = engine.Extra{Name: "lease_id", Value: 1 << 40}, 1
	d := newReader(appendResult(nil, &r))
	got := d.result()
	if d.Err() != nil || got.Decision != r.Decision || got.Extras != r.Extras || got.NExtras != 1 || got.Members != 3 {
		t.Fatalf("result %+v (%v), want %+v", got, d.Err(), r)
	}
	for _, res := range []engine.Result{{Type: engine.ResIntBulk, Int: -42}, {Type: engine.ResError, Err: engine.ErrAllMember, Members: 2},
		{Type: engine.ResNilArray}} {
		d := newReader(appendResult(nil, &res))
		got := d.result()
		if d.Err() != nil || got.Type != res.Type && res.Type != engine.ResError || got.Int != res.Int || got.Members != res.Members ||
			(res.Err != nil && got.Err.Error() != res.Err.Error()) {
			t.Fatalf("result %+v (%v), want %+v", got, d.Err(), res)
		}
	}
}

// shareCommand is an RL.SHARE of 1000 units a second on key.
func shareCommand(key, holder string, demand, ack int64) engine.Command {
	q := engine.ShareRequest{Holder: []byte(holder), Limit: 1000, Window: 1000, Demand: demand,
		TTL: engine.DefaultShareTTL, Burst: engine.DefaultShareBurst, Ack: ack}
	return q.Command([]byte(key))
}

// RL.SHARE's reply, a record of named integers, crosses the bus whole.
func TestShareResultRoundTrip(t *testing.T) {
	r := engine.Result{Type: engine.ResRecord, Fields: []engine.Field{{Name: "rate", Int: 500}, {Name: "seq", Int: 1 << 61}}}
	d := newReader(appendResult(nil, &r))
	got := d.result()
	if d.Err() != nil || got.Type != engine.ResRecord || len(got.Fields) != 2 || got.Fields[0] != r.Fields[0] || got.Fields[1] != r.Fields[1] {
		t.Fatalf("result %+v (%v), want %+v", got, d.Err(), r)
	}
}

// The ops added since the first releases come after every op of the
// releases before them, which therefore halt on an entry that holds one
// (ErrNewerEntry) rather than skip it: RL.SHARE's, then the global keys',
// then RL.RESERVE's, then WATCH's.
func TestNewOpsComeLast(t *testing.T) {
	if engine.OpShare != engine.OpTop+1 || engine.OpUnshare != engine.OpShare+1 {
		t.Fatalf("RL.SHARE's ops are %d and %d after OpTop %d", engine.OpShare, engine.OpUnshare, engine.OpTop)
	}
	if engine.OpGlobalScan != engine.OpUnshare+1 || engine.OpGlobalCounts != engine.OpGlobalScan+3 {
		t.Fatalf("the global ops are %d to %d after OpUnshare %d", engine.OpGlobalScan, engine.OpGlobalCounts, engine.OpUnshare)
	}
	if engine.OpReserve != engine.OpGlobalCounts+1 || engine.OpSettle != engine.OpReserve+1 {
		t.Fatalf("RL.RESERVE's ops are %d and %d after OpGlobalCounts %d", engine.OpReserve, engine.OpSettle, engine.OpGlobalCounts)
	}
	if engine.OpWatch != engine.OpSettle+1 || (engine.OpWatch + 1).Known() {
		t.Fatalf("WATCH's op is %d, not the last, after OpSettle %d", engine.OpWatch, engine.OpSettle)
	}
}

// A guard (OpWatch) carries a live key's fingerprint or none, and guards a
// count of commands; a command read from a log that holds anything else is
// refused, as one of a known op with bad parameters is.
func TestWatchGuardsAreChecked(t *testing.T) {
	fp := strings.Repeat("f", engine.FingerprintLen)
	cmds := []engine.Command{
		{Op: engine.OpWatch, Key: []byte("k"), Args: [4]int64{engine.WatchRead}},
		{Op: engine.OpWatch, Key: []byte("k"), Value: []byte(fp), Args: [4]int64{engine.WatchGuard, 3}},
		{Op: engine.OpWatch, Key: []byte("k"), Args: [4]int64{engine.WatchGuard, 0}},
	}
	for _, c := range cmds {
		if err := c.Check(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	for _, c := range []engine.Command{
		{Op: engine.OpWatch, Key: []byte("k"), Value: []byte("short"), Args: [4]int64{engine.WatchGuard, 1}},
		{Op: engine.OpWatch, Key: []byte("k"), Value: []byte(fp), Args: [4]int64{engine.WatchRead}},
		{Op: engine.OpWatch, Key: []byte("k"), Args: [4]int64{2}},
		{Op: engine.OpWatch, Key: []byte("k"), Args: [4]int64{engine.WatchGuard, -1}},
	} {
		if c.Check() == nil {
			t.Errorf("%+v passed Check", c)
		}
	}
}

// A GLOBAL decision and each of the federation's ops cross the bus (and
// the log) whole.
func TestGlobalOpsRoundTrip(t *testing.T) {
	p := [3]int64{100, 60_000}
	lease := engine.GlobalLeaseRequest{Region: "eu", Algo: engine.OpSliding, Params: p, Req: 9, Demand: 5, Need: 3,
		Period: 200, TTL: 1000, Retired: []engine.GlobalUse{{ID: 4, Used: 2}}}
	install := engine.GlobalInstall{Algo: engine.OpSliding, Params: p, Req: 9, Base: 5, Grant: engine.GlobalGrant{Req: 9, Block: 7, Units: 3, TTL: 90, Acked: []int64{4}}}
	counts := engine.GlobalCounts{Region: "us", Algo: engine.OpFixed, Params: p, State: [3]int64{60_000, 4}}
	cmds := []engine.Command{
		{Op: engine.OpFixed, Key: []byte("k"), Flags: engine.FlagGlobal | engine.FlagRelaxed, Args: [4]int64{100, 60_000, 0, 1}},
		engine.GlobalScanCommand(0, 100), lease.Command([]byte("k")), install.Command([]byte("k")), counts.Command([]byte("k")),
	}
	_, got, err := decodeBatch(appendBatch(nil, 1000, []*Request{{Cmds: cmds}}), nil)
	if err != nil || len(got) != len(cmds) {
		t.Fatalf("decoded %d commands: %v", len(got), err)
	}
	for i, c := range cmds {
		if g := got[i]; g.Op != c.Op || g.Flags != c.Flags || string(g.Key) != string(c.Key) ||
			string(g.Value) != string(c.Value) || g.Args != c.Args {
			t.Fatalf("command %+v came back %+v", c, g)
		}
	}
}

// TestErrorsKeepTheirIdentityOnTheBus: an error crosses the bus as its
// identity, so the node that sent the request answers it as the leader
// would have: an engine error keeps its code (and so its reply's first
// word) and its message, the cluster's own keep their sentinels and codes,
// and any other error its text.
func TestErrorsKeepTheirIdentityOnTheBus(t *testing.T) {
	policy := fmt.Errorf("%w 'orders'", engine.ErrNoPolicy)
	for _, err := range []error{
		engine.ErrWrongType, engine.ErrOOM, engine.ErrZeroRate, policy,
		&engine.Error{Code: engine.CodeParam, Msg: "limit must be an integer from 1 to 10"},
		ErrNotApplied, ErrMayHaveBeenCounted, ErrShuttingDown,
		&MembershipError{Code: MemberRemoved, Msg: "node n3 was removed from the cluster"},
		errors.New("ERR something else"),
	} {
		res := engine.Result{Type: engine.ResError, Err: err, Members: 1}
		d := newReader(appendResult(nil, &res))
		got := d.result()
		if d.Err() != nil || got.Type != engine.ResError || got.Members != 1 || got.Err.Error() != err.Error() {
			t.Fatalf("%v: decoded %+v (%v)", err, got, d.Err())
		}
		var want *engine.Error
		if errors.As(err, &want) {
			var e *engine.Error
			if !errors.As(got.Err, &e) || e.Code != want.Code || !errors.Is(got.Err, want) {
				t.Errorf("%v: decoded %#v, lost its code", err, got.Err)
			}
		}
		for _, sentinel := range []error{ErrNotApplied, ErrMayHaveBeenCounted, ErrShuttingDown, ErrRemoved} {
			if errors.Is(err, sentinel) != errors.Is(got.Err, sentinel) {
				t.Errorf("%v: decoded %v, errors.Is(%v) changed", err, got.Err, sentinel)
			}
		}
		d = newReader(appendError(nil, replyError, err))
		if d.Byte() != replyError || d.error().Error() != err.Error() || d.Err() != nil {
			t.Errorf("%v: a request's error did not round-trip", err)
		}
	}
}

// FuzzDecodeBatch: whatever bytes a log entry or a peer holds, decoding never
// panics; what decodes is valid, and encodes back to the same batch.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendBatch(nil, 5_000, []*Request{{Cmds: []engine.Command{{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{100, 60_000, 0, 1}}}}}))
	f.Add(appendBatch(nil, 1_700_000_000_000_000, []*Request{{Cmds: []engine.Command{
		{Op: engine.OpSet, Key: []byte("s"), Value: []byte("v"), Flags: engine.FlagNX, Args: [4]int64{5000, engine.ExpiryRelative}},
		{Op: engine.OpAll, Key: []byte("a"), Args: [4]int64{1}},
		{Op: engine.OpCheck, Key: []byte("a"), Value: []byte("p"), Args: [4]int64{3: -2}},
	}}}))
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		now, cmds, err := decodeBatch(data, nil)
		if err != nil {
			return
		}
		for _, c := range cmds {
			if !c.Valid() {
				t.Fatalf("decoded an invalid command %+v", c)
			}
		}
		again := appendBatch(nil, now, []*Request{{Cmds: cmds}})
		now2, cmds2, err := decodeBatch(again, nil)
		if again[0] < entryVersion3 {
			now -= now % 1000 // only a script's batch keeps the microseconds
		}
		if err != nil || now2 != now || len(cmds2) != len(cmds) {
			t.Fatalf("re-encoded batch: %v", err)
		}
		for i := range cmds {
			a, b := cmds[i], cmds2[i]
			if a.Op != b.Op || a.Flags != b.Flags || a.Args != b.Args || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("command %d: %+v became %+v", i, a, b)
			}
		}
	})
}

// A reply of several values crosses the bus as RESP3 text, a length ahead
// of it: the form of the releases before values (their ResRESP, the same
// type byte), so a node of either release reads what the other sends.
func TestResultValuesCrossAsRESP3Text(t *testing.T) {
	long := strings.Repeat("v", 200) // a length of two bytes, which the text moves up for
	vs := []resp.Value{resp.Map(2), resp.Bulk("a"), resp.Bulk(long), resp.Bulk("b"), resp.Array(2), resp.Int(-1), resp.Null()}
	r := engine.Result{Type: engine.ResValues, Values: vs}
	text := "%2\r\n$1\r\na\r\n$200\r\n" + long + "\r\n$1\r\nb\r\n*2\r\n:-1\r\n_\r\n"
	before := append([]byte{byte(engine.ResValues)}, binary.AppendUvarint(nil, uint64(len(text)))...)
	before = append(before, text...)
	if got := appendResult([]byte("prefix"), &r); !bytes.Equal(got[len("prefix"):], before) {
		t.Fatalf("encoded %q, want %q", got, before)
	}
	d := newReader(before)
	got := d.result()
	if d.Err() != nil || d.Len() != 0 || got.Type != engine.ResValues || !slices.Equal(got.Values, vs) {
		t.Fatalf("decoded %+v (%v), want %v", got, d.Err(), vs)
	}
	bad := append([]byte{byte(engine.ResValues), 3}, "*2\n"...)
	if d := (newReader(bad)); d.result().Type == engine.ResValues && d.Err() == nil {
		t.Fatal("a reply that is not RESP decoded")
	}
}

// FuzzDecodeResult: a forwarded result never panics the node decoding it.
func FuzzDecodeResult(f *testing.F) {
	r := engine.Result{Type: engine.ResDecision, Decision: engine.Decision{Allowed: true, Limit: 5}, NExtras: 1, Members: 2}
	r.Extras[0] = engine.Extra{Name: "granted", Value: 3}
	f.Add(appendResult(nil, &r))
	f.Add(appendResult(nil, &engine.Result{Type: engine.ResFields, Fields: []engine.Field{{Name: "a", Int: 1}}}))
	f.Add(appendResult(nil, &engine.Result{Type: engine.ResValues, Values: []resp.Value{resp.Array(2), resp.Bulk("x"), resp.Null()}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newReader(data)
		res := d.result()
		if d.Err() == nil && int(res.NExtras) > len(res.Extras) {
			t.Fatalf("decoded %d extras", res.NExtras)
		}
	})
}

// An entry only a newer rlserver knows halts the replica: it applies nothing
// more and takes no snapshot (its state would no longer be the state at its
// applied index), and the node is told to stop.
func TestNewerEntryHaltsTheReplica(t *testing.T) {
	plain := appendBatch(nil, 5_000, []*Request{{Cmds: []engine.Command{{Op: engine.OpSliding, Key: []byte("k"), Args: [4]int64{5, 1000, 0, 1}}}}})
	newerVersion := append([]byte{entryVersion3 + 1}, plain[1:]...)
	unknownOp := bytes.Clone(plain)
	unknownOp[3] = 200 // the first command's op
	// A script stamped with a script runtime this release does not run.
	newerScript := appendBatch(nil, 5_000, []*Request{{Cmds: []engine.Command{{Op: engine.OpEval,
		Value: engine.Pack([][]byte{[]byte("return 1")}), Args: [4]int64{engine.ScriptRuntime + 1, 0}}}}})
	for name, entry := range map[string][]byte{"version": newerVersion, "op": unknownOp, "script runtime": newerScript} {
		t.Run(name, func(t *testing.T) {
			halt := make(chan error, 1)
			f := newShardFSM(0, &observerSlot{}, halt, nil)
			out := f.ApplyBatch([]*raft.Log{
				{Index: 1, Type: raft.LogCommand, Data: plain},
				{Index: 2, Type: raft.LogCommand, Data: entry},
				{Index: 3, Type: raft.LogCommand, Data: plain},
			})
			if out[0] != nil {
				t.Fatalf("entry 1, applied with nobody waiting: %v", out[0])
			}
			for i := 1; i < 3; i++ {
				if err, _ := out[i].(error); !errors.Is(err, ErrNewerEntry) {
					t.Fatalf("entry %d: %v, want ErrNewerEntry", i+1, out[i])
				}
			}
			select {
			case err := <-halt:
				if !errors.Is(err, ErrNewerEntry) {
					t.Fatal(err)
				}
			default:
				t.Fatal("the node was not told")
			}
			if _, err := f.Snapshot(); !errors.Is(err, ErrNewerEntry) {
				t.Fatalf("snapshot of a halted replica: %v", err)
			}
			if n := f.shard.Stats().Keys; n != 1 {
				t.Fatalf("%d keys: entry 3 was applied after the halt", n)
			}
		})
	}
}

// A request that ends as a whole with a sentinel crosses the bus with the
// answering node's text: the forwarding node's client learns why, and
// errors.Is still finds the sentinel. A node of a release before it reads
// the same reply as the sentinel alone, and a reply from such a node (no
// text) reads as the sentinel. Other errors cross as they always did.
func TestRequestErrorCarriesItsText(t *testing.T) {
	for _, sentinel := range []error{ErrNotApplied, ErrMayHaveBeenCounted, ErrShuttingDown} {
		err := retryError(2, "n3", sentinel, "the leader lost its leadership")
		reply := appendRequestError(nil, err)
		d := newReader(reply)
		got := readRequestError(t, d, "n3")
		var fe *ForwardedError
		if !errors.Is(got, sentinel) || !errors.As(got, &fe) || fe.Peer != "n3" || fe.Text != err.Error() ||
			got.Error() != "forwarded to n3: "+err.Error() {
			t.Errorf("%v: decoded %#v", err, got)
		}
		old := newReader(reply) // as releases before it read it
		if old.Byte() != replyError || old.error() != sentinel || old.Err() != nil {
			t.Errorf("%v: a release before it reads %v", err, old.Err())
		}
		bare := newReader(appendError(nil, replyError, sentinel)) // from a release before it
		if got := readRequestError(t, bare, "n3"); got != sentinel {
			t.Errorf("%v without a text: decoded %#v", sentinel, got)
		}
	}
	long := newReader(appendRequestError(nil, fmt.Errorf("%s: %w", strings.Repeat("x", 2*maxWireError), ErrNotApplied)))
	var fe *ForwardedError
	if got := readRequestError(t, long, "n3"); !errors.As(got, &fe) || len(fe.Text) != maxWireError {
		t.Errorf("a long text: decoded %d bytes, want %d", len(fe.Text), maxWireError)
	}
	for _, err := range []error{engine.ErrWrongType, &Failure{"shard commit failed"}, errBadEntry} {
		d := newReader(appendRequestError(nil, err))
		if got := readRequestError(t, d, "n3"); got.Error() != err.Error() {
			t.Errorf("%v: decoded %v", err, got)
		}
	}
}

// readRequestError reads a reply's tag, which must be replyError, then its
// error, which must be all the reply holds.
func readRequestError(t *testing.T, d *reader, peer string) error {
	t.Helper()
	if tag := d.Byte(); tag != replyError {
		t.Fatalf("tag %d, want replyError", tag)
	}
	err := d.requestError(peer)
	if d.Err() != nil || d.Len() != 0 {
		t.Fatalf("decoding: %v, %d bytes left", d.Err(), d.Len())
	}
	return err
}

// An entry is encoded into one allocation: its commands' commandSize and
// the longest header are never short of what appendBatch writes, at
// versions 1 and 2 and for the longest varints.
func TestBatchEncodesInOneAllocation(t *testing.T) {
	extreme := engine.Command{Op: engine.OpSliding, Key: bytes.Repeat([]byte("k"), 300), Args: [4]int64{-1 << 63, 1<<63 - 1, -1, 64}, Flags: 1<<16 - 1}
	batches := map[string][]*Request{
		"version 1": {{Cmds: []engine.Command{{Op: engine.OpSliding, Key: []byte("user:ada"), Args: [4]int64{100, 60_000}}}}},
		"version 2": {{Cmds: []engine.Command{{Op: engine.OpSet, Key: []byte("s"), Value: bytes.Repeat([]byte("v"), 200), Flags: engine.FlagNX}}}, {Cmds: []engine.Command{extreme}}},
		"several":   {{Cmds: []engine.Command{extreme, extreme}}, {Cmds: []engine.Command{{Op: engine.OpCheck, Key: []byte("a")}}}},
	}
	for name, reqs := range batches {
		for _, us := range []int64{1_700_000_000_000_000, 1<<63 - 1} {
			data := appendBatch(nil, us, reqs)
			size := 1 + 2*binary.MaxVarintLen64
			for _, r := range reqs {
				for i := range r.Cmds {
					size += commandSize(&r.Cmds[i])
				}
			}
			if len(data) > size {
				t.Errorf("%s at version %d: %d bytes written, sized for %d", name, data[0], len(data), size)
			}
		}
		if allocs := testing.AllocsPerRun(100, func() { appendBatch(nil, 1_700_000_000_000_000, reqs) }); allocs != 1 {
			t.Errorf("%s: %v allocations an entry, want 1", name, allocs)
		}
	}
}
