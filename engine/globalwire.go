package engine

import (
	"errors"
	"math"
	"slices"

	"github.com/rlserver/rlserver/internal/wire"
)

// The federation layer's ops carry their requests in a Command's Value and
// Args, and their answers in a Result's Text (ResBulk), both encoded here
// with internal/wire: the layer builds them with the Command methods and
// reads them with the Decode functions, and the cluster's codec carries
// them between nodes as it carries any command.

// errGlobalWire is the error a malformed encoding of these ops wraps.
var errGlobalWire = errors.New("malformed global-key request")

// GlobalLeaseRequest is what a region asks of a key's home (OpGlobalLease):
// a new block, with the reports of the blocks it is done with.
type GlobalLeaseRequest struct {
	Region string
	Algo   Op
	Params [3]int64 // as the command gives them
	Req    int64    // the region's request id (GlobalKey.NextReq)
	// Demand is the units per rate period the region was asked for lately,
	// allowed and refused, or UnknownDemand.
	Demand int64
	// Need is the units it wants beyond what it holds, for Period ms.
	Need int64
	// Period is the ms a block is meant to last; TTL, the most it may.
	Period, TTL int64
	// Lag is the ms the region expects between building the request and
	// recording its answer (the link's round trip): a block is sized for
	// what the region can use of its life after that.
	Lag int64
	// Floor and Dropped are units to count as used: admitted under the
	// partition floor, and of reports the region had to drop.
	Floor, Dropped int64
	Retired        []GlobalUse // the blocks done with
}

// Command is the engine command that asks for q on key.
func (q *GlobalLeaseRequest) Command(key []byte) Command {
	v := wire.AppendString(nil, q.Region)
	v = wire.AppendVarints(v, int64(q.Algo), q.Req, q.Demand, q.Need, q.Period, q.TTL, q.Lag, q.Floor, q.Dropped,
		int64(len(q.Retired)))
	for _, u := range q.Retired {
		v = wire.AppendVarints(v, u.ID, u.Used)
	}
	return Command{Op: OpGlobalLease, Key: key, Value: v, Args: [4]int64{q.Params[0], q.Params[1], q.Params[2]}}
}

// DecodeGlobalLease reads the request an OpGlobalLease carries (the
// federation's server checks its region against the link's).
func DecodeGlobalLease(c *Command) (GlobalLeaseRequest, error) { return globalLeaseOf(c) }

// globalLeaseOf decodes what Command encoded.
func globalLeaseOf(c *Command) (GlobalLeaseRequest, error) {
	r := wire.NewReader(c.Value, errGlobalWire)
	q := GlobalLeaseRequest{Region: string(r.Bytes(MaxRegionLen)), Params: [3]int64{c.Args[0], c.Args[1], c.Args[2]}}
	q.Algo = Op(r.Varint())
	q.Req, q.Demand, q.Need, q.Period, q.TTL, q.Lag = r.Varint(), r.Varint(), r.Varint(), r.Varint(), r.Varint(), r.Varint()
	q.Floor, q.Dropped = r.Varint(), r.Varint()
	n := r.Varint()
	if r.Err() != nil || n < 0 || n > maxGlobalRetired+maxGlobalBlocks {
		return q, errGlobalWire
	}
	for range n {
		q.Retired = append(q.Retired, GlobalUse{ID: r.Varint(), Used: r.Varint()})
	}
	if r.Err() != nil || r.Len() != 0 {
		return q, errGlobalWire
	}
	return q, nil
}

// checkGlobalLease checks an OpGlobalLease.
func checkGlobalLease(c Command) error {
	q, err := globalLeaseOf(&c)
	if err != nil {
		return paramError("malformed lease request")
	}
	if err := checkGlobalKey(q.Region, q.Algo, false, q.Params); err != nil {
		return err
	}
	if q.Req < 1 || (q.Demand < 0 && q.Demand != UnknownDemand) || !validCount(q.Need) ||
		q.Period < 1 || q.Period > MaxShareTTL || q.TTL < 1 || q.TTL > MaxShareTTL || q.Lag < 0 || q.Lag > MaxShareTTL ||
		!validCount(q.Floor) || !validCount(q.Dropped) {
		return paramError("lease request out of range")
	}
	for _, u := range q.Retired {
		if u.ID < 1 || !validCount(u.Used) {
			return paramError("lease request out of range")
		}
	}
	return nil
}

// checkGlobalKey checks what names a global key's region and algorithm.
func checkGlobalKey(region string, algo Op, relaxed bool, p [3]int64) error {
	ops := GlobalOps
	if relaxed {
		ops = GlobalRelaxedOps
	}
	if (region != "" || relaxed) && (len(region) < 1 || len(region) > MaxRegionLen) {
		return paramError("region must be 1 to %d bytes long", MaxRegionLen)
	}
	if !slices.Contains(ops, algo) || !validArgs(algo, p) {
		return paramError("not a global key's algorithm or parameters")
	}
	return nil
}

// GlobalGrant is the home's answer to a lease request: a block of Units
// (0: none) lasting TTL ms from when the home applied the request, the
// region's fair share (units per rate period), and what the request
// reported that the home has now counted. Stale is set when the request
// is older than one the home has answered since: nothing was done.
type GlobalGrant struct {
	Req, Block, Units, TTL, Share int64
	Acked                         []int64
	Floor, Dropped                int64
	Stale                         bool
}

// appendGrant encodes a into a Result's text.
func appendGrant(b []byte, a *GlobalGrant) []byte {
	b = wire.AppendBool(b, a.Stale)
	b = wire.AppendVarints(b, a.Req, a.Block, a.Units, a.TTL, a.Share, a.Floor, a.Dropped, int64(len(a.Acked)))
	return wire.AppendVarints(b, a.Acked...)
}

// DecodeGlobalGrant reads an OpGlobalLease's result.
func DecodeGlobalGrant(res *Result) (GlobalGrant, error) {
	var a GlobalGrant
	if res.Type != ResBulk {
		return a, errGlobalWire
	}
	r := wire.NewReader([]byte(res.Text), errGlobalWire)
	a.Stale = r.Bool()
	a.Req, a.Block, a.Units, a.TTL, a.Share = r.Varint(), r.Varint(), r.Varint(), r.Varint(), r.Varint()
	a.Floor, a.Dropped = r.Varint(), r.Varint()
	n := r.Varint()
	if r.Err() != nil || n < 0 || int(n) > r.Len() {
		return a, errGlobalWire
	}
	for range n {
		a.Acked = append(a.Acked, r.Varint())
	}
	if r.Err() != nil || r.Len() != 0 {
		return a, errGlobalWire
	}
	return a, nil
}

// GlobalInstall is what a region records (OpGlobalInstall): the grant that
// answered its request Req (0: none), based at the shard time Base its
// request was built at (GlobalScan.Now), so that the block ends no later
// than the home's; a block of the partition floor (FloorUnits until
// FloorUntil); whether to retire every live block first (Seal); and the
// wait a refused request is told (Retry, ms).
type GlobalInstall struct {
	Algo                   Op
	Params                 [3]int64
	Req, Base              int64
	Grant                  GlobalGrant
	FloorUnits, FloorUntil int64
	Seal                   bool
	Retry                  int64
}

// Command is the engine command that records q on key.
func (q *GlobalInstall) Command(key []byte) Command {
	v := wire.AppendVarints(nil, int64(q.Algo), q.Req, q.Base, q.FloorUnits, q.FloorUntil, q.Retry)
	v = wire.AppendBool(v, q.Seal)
	v = appendGrant(v, &q.Grant)
	return Command{Op: OpGlobalInstall, Key: key, Value: v, Args: [4]int64{q.Params[0], q.Params[1], q.Params[2]}}
}

// globalInstallOf decodes what Command encoded.
func globalInstallOf(c *Command) (GlobalInstall, error) {
	r := wire.NewReader(c.Value, errGlobalWire)
	q := GlobalInstall{Params: [3]int64{c.Args[0], c.Args[1], c.Args[2]}, Algo: Op(r.Varint())}
	q.Req, q.Base, q.FloorUnits, q.FloorUntil, q.Retry = r.Varint(), r.Varint(), r.Varint(), r.Varint(), r.Varint()
	q.Seal = r.Bool()
	if r.Err() != nil {
		return q, errGlobalWire
	}
	g, err := DecodeGlobalGrant(&Result{Type: ResBulk, Text: string(r.Rest())})
	q.Grant = g
	return q, err
}

// checkGlobalInstall checks an OpGlobalInstall.
func checkGlobalInstall(c Command) error {
	q, err := globalInstallOf(&c)
	if err != nil {
		return paramError("malformed install")
	}
	if err := checkGlobalKey("", q.Algo, false, q.Params); err != nil {
		return err
	}
	a := q.Grant
	if q.Req < 0 || !validTime(q.Base) || !validCount(q.FloorUnits) || !validTime(q.FloorUntil) ||
		q.Retry < 0 || q.Retry > MaxShareTTL || !validCount(a.Units) || a.TTL < 0 || a.TTL > MaxShareTTL ||
		a.Block < 0 || !validCount(a.Floor) || !validCount(a.Dropped) || len(a.Acked) > maxGlobalRetired+maxGlobalBlocks {
		return paramError("install out of range")
	}
	return nil
}

// GlobalCounts is another region's counts of a relaxed key
// (OpGlobalCounts), in its algorithm's state layout, with the most it
// admitted in one of its reporting intervals lately (Peak) and the
// overshoot bound the receiving region's federation layer computed.
type GlobalCounts struct {
	Region      string
	Algo        Op
	Params      [3]int64
	State       [3]int64
	Peak, Bound int64
}

// Command is the engine command that records q on key.
func (q *GlobalCounts) Command(key []byte) Command {
	v := wire.AppendString(nil, q.Region)
	v = wire.AppendVarints(v, int64(q.Algo), q.State[0], q.State[1], q.State[2], q.Peak, q.Bound)
	return Command{Op: OpGlobalCounts, Key: key, Value: v, Args: [4]int64{q.Params[0], q.Params[1], q.Params[2]}}
}

// DecodeGlobalCounts reads the counts an OpGlobalCounts carries.
func DecodeGlobalCounts(c *Command) (GlobalCounts, error) { return globalCountsOf(c) }

// globalCountsOf decodes what Command encoded.
func globalCountsOf(c *Command) (GlobalCounts, error) {
	r := wire.NewReader(c.Value, errGlobalWire)
	q := GlobalCounts{Region: string(r.Bytes(MaxRegionLen)), Params: [3]int64{c.Args[0], c.Args[1], c.Args[2]}}
	q.Algo = Op(r.Varint())
	q.State = [3]int64{r.Varint(), r.Varint(), r.Varint()}
	q.Peak, q.Bound = r.Varint(), r.Varint()
	if r.Err() != nil || r.Len() != 0 {
		return q, errGlobalWire
	}
	return q, nil
}

// checkGlobalCounts checks an OpGlobalCounts.
func checkGlobalCounts(c Command) error {
	q, err := globalCountsOf(&c)
	if err != nil {
		return paramError("malformed counts")
	}
	if err := checkGlobalKey(q.Region, q.Algo, true, q.Params); err != nil {
		return err
	}
	if !validTime(q.State[0]) || !validCount(q.State[1]) || !validCount(q.State[2]) ||
		!validCount(q.Peak) || q.Bound < 0 || q.Bound > math.MaxInt64/2 {
		return paramError("counts out of range")
	}
	return nil
}
