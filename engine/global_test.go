package engine

import (
	"errors"
	"testing"
)

// globalDecide runs one GLOBAL decision of cost on key.
func globalDecide(t *testing.T, s *Shard, now int64, op Op, key string, relaxed bool, p [3]int64, cost int64) Decision {
	t.Helper()
	c := Command{Op: op, Key: []byte(key), Flags: FlagGlobal, Args: [4]int64{p[0], p[1], p[2], cost}}
	if relaxed {
		c.Flags |= FlagRelaxed
	}
	if err := c.Check(); err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	r := run(s, now, c)[0]
	if r.Type != ResDecision {
		t.Fatalf("GLOBAL %s at %d: %+v", key, now, r)
	}
	return r.Decision
}

// scanGlobal lists a shard's global keys.
func scanGlobal(t *testing.T, s *Shard, now int64) GlobalScan {
	t.Helper()
	c := GlobalScanCommand(0, MaxGlobalScan)
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	sc, err := DecodeGlobalScan(&run(s, now, c)[0])
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// askHome applies q at the home and returns its grant.
func askHome(t *testing.T, home *Shard, now int64, key string, q GlobalLeaseRequest) GlobalGrant {
	t.Helper()
	c := q.Command([]byte(key))
	if err := c.Check(); err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	r := run(home, now, c)[0]
	a, err := DecodeGlobalGrant(&r)
	if err != nil {
		t.Fatalf("lease %+v: %+v: %v", q, r, err)
	}
	return a
}

// install records a on key at a region and returns whether it was.
func install(t *testing.T, s *Shard, now int64, key string, q GlobalInstall) bool {
	t.Helper()
	c := q.Command([]byte(key))
	if err := c.Check(); err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	r := run(s, now, c)[0]
	if r.Type != ResInt {
		t.Fatalf("install %+v: %+v", q, r)
	}
	return r.Int == 1
}

func TestGlobalStrictDecidesFromItsBlocks(t *testing.T) {
	p := [3]int64{100, 60_000}
	region, home := NewShard(), NewShard()
	const t0 = 1_700_000_040_000
	d := globalDecide(t, region, t0, OpSliding, "k", false, p, 1)
	if d.Allowed || d.RetryAfter != DefaultGlobalRetry || d.Limit != 100 {
		t.Fatalf("no block yet: %+v", d)
	}
	sc := scanGlobal(t, region, t0+1)
	if len(sc.Keys) != 1 || sc.Keys[0].Asked != 1 || sc.Keys[0].Held != 0 || sc.Keys[0].NextReq != leaseID(0, t0) {
		t.Fatalf("scan: %+v", sc)
	}
	k := sc.Keys[0]
	q := GlobalLeaseRequest{Region: "eu", Algo: OpSliding, Params: p, Req: k.NextReq, Demand: UnknownDemand,
		Need: 10, Period: 1000, TTL: 5000}
	a := askHome(t, home, t0+50, "k", q)
	// Its need, and, as nothing else is asked for, three times it more
	// from half of what is left.
	if a.Units != 40 || a.Block == 0 || a.TTL != 5000 || a.Share != 100 {
		t.Fatalf("grant: %+v", a)
	}
	if !install(t, region, t0+100, "k", GlobalInstall{Algo: OpSliding, Params: p, Req: k.NextReq, Base: sc.Now, Grant: a, Retry: 150}) {
		t.Fatal("not installed")
	}
	if install(t, region, t0+101, "k", GlobalInstall{Algo: OpSliding, Params: p, Req: k.NextReq, Base: sc.Now, Grant: a}) {
		t.Fatal("installed twice")
	}
	for j := range 40 {
		if d := globalDecide(t, region, t0+200, OpSliding, "k", false, p, 1); !d.Allowed || d.Remaining != int64(39-j) {
			t.Fatalf("unit %d: %+v", j, d)
		}
	}
	if d := globalDecide(t, region, t0+200, OpSliding, "k", false, p, 1); d.Allowed || d.RetryAfter != 150 {
		t.Fatalf("block used up: %+v", d)
	}
	// The home counted the block at once: 90 left.
	if f := info(t, home, t0+300, "k"); f["home_available"] != int64(60) || f["region:eu:granted"] != int64(40) {
		t.Fatalf("home: %v", f)
	}
	// The used-up block is reported with the next request, and the ledger
	// says so; nothing is refunded, since it was all used.
	sc = scanGlobal(t, region, t0+400)
	k = sc.Keys[0]
	if len(k.Retired) != 1 || k.Retired[0].Used != 40 || k.Retired[0].ID != a.Block {
		t.Fatalf("reports: %+v", k)
	}
	q.Req, q.Retired, q.Need = k.NextReq, k.Retired, 0
	a2 := askHome(t, home, t0+450, "k", q)
	if len(a2.Acked) != 1 || a2.Acked[0] != a.Block || a2.Units != 0 {
		t.Fatalf("second grant: %+v", a2)
	}
	if f := info(t, home, t0+460, "k"); f["region:eu:used"] != int64(40) || f["region:eu:refunded"] != int64(0) ||
		f["region:eu:outstanding"] != int64(0) {
		t.Fatalf("home after the report: %v", f)
	}
}

func TestGlobalLeaseRetryGetsTheSameAnswer(t *testing.T) {
	p := [3]int64{100, 60_000}
	home := NewShard()
	const t0 = 1_700_000_040_000
	q := GlobalLeaseRequest{Region: "us", Algo: OpFixed, Params: p, Req: 7, Demand: 6000, Need: 30, Period: 1000, TTL: 10_000}
	a := askHome(t, home, t0, "k", q)
	b := askHome(t, home, t0+400, "k", q)
	if a.Block != b.Block || a.Units != b.Units || b.TTL != a.TTL-400 {
		t.Fatalf("retry: %+v, first %+v", b, a)
	}
	if f := info(t, home, t0+500, "k"); f["home_available"] != 100-a.Units {
		t.Fatalf("counted twice: %v", f)
	}
	q.Req = 6
	if s := askHome(t, home, t0+600, "k", q); !s.Stale || s.Units != 0 {
		t.Fatalf("an older request: %+v", s)
	}
}

func TestGlobalRefundOnlyInTheBlocksWindow(t *testing.T) {
	p := [3]int64{100, 60_000}
	const w0 = 1_700_000_040_000 // a window's start
	for _, tc := range []struct {
		name   string
		report int64 // when the block's report reaches the home
		want   int64 // available at the home after it
	}{
		{"same window", w0 + 30_000, 100 - 4},
		{"next window", w0 + 61_000, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := NewShard()
			q := GlobalLeaseRequest{Region: "eu", Algo: OpFixed, Params: p, Req: 1, Demand: UnknownDemand, Need: 40, Period: 1000, TTL: 90_000}
			a := askHome(t, home, w0+1000, "k", q)
			if a.Units != 70 || a.TTL != 59_000 { // 40 and 30 of the 60 left; a block never outlives its window
				t.Fatalf("grant: %+v", a)
			}
			q.Req, q.Need, q.Retired = 2, 0, []GlobalUse{{ID: a.Block, Used: 4}}
			askHome(t, home, tc.report, "k", q)
			if f := info(t, home, tc.report, "k"); f["home_available"] != tc.want {
				t.Fatalf("available %v, want %d", f["home_available"], tc.want)
			}
		})
	}
}

func TestGlobalErrors(t *testing.T) {
	s := NewShard()
	p := [3]int64{10, 1000}
	globalDecide(t, s, 1000, OpSliding, "k", false, p, 1)
	c := Command{Op: OpFixed, Key: []byte("k"), Flags: FlagGlobal, Args: [4]int64{10, 1000, 0, 1}}
	if r := run(s, 1000, c)[0]; !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("another algorithm: %+v", r)
	}
	c.Op, c.Flags = OpSliding, FlagGlobal|FlagRelaxed
	if r := run(s, 1000, c)[0]; !errors.Is(r.Err, ErrGlobalMode) {
		t.Fatalf("another mode: %+v", r)
	}
	c.Flags = 0
	if r := run(s, 1000, c)[0]; !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("not global: %+v", r)
	}
	for _, bad := range []Command{
		{Op: OpToken, Flags: FlagGlobal | FlagRelaxed, Args: [4]int64{10, 1, 100, 1}},
		{Op: OpSliding, Flags: FlagRelaxed, Args: [4]int64{10, 1000, 0, 1}},
		{Op: OpSliding, Flags: FlagGlobal | FlagCountRefused, Args: [4]int64{10, 1000, 0, 1}},
		{Op: OpLog, Flags: FlagGlobal, Args: [4]int64{10, 1000, 0, 1}},
		{Op: OpToken, Flags: FlagGlobal | FlagForce, Args: [4]int64{10, 1, 100, 1}},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v passes its check", bad)
		}
	}
}

func TestGlobalRelaxedDecidesOnTheSum(t *testing.T) {
	p := [3]int64{100, 60_000}
	s := NewShard()
	const w0 = 1_700_000_040_000
	cnt := GlobalCounts{Region: "us", Algo: OpFixed, Params: p, State: [3]int64{w0, 70}, Peak: 5, Bound: 12}
	c := cnt.Command([]byte("k"))
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	run(s, w0+10, c, c) // twice: the same
	cnt.State[1] = 60   // late and lower: no change
	run(s, w0+20, cnt.Command([]byte("k")))
	allowed, _ := 0, 0
	for range 40 {
		if globalDecide(t, s, w0+100, OpFixed, "k", true, p, 1).Allowed {
			allowed++
		}
	}
	if allowed != 30 {
		t.Fatalf("allowed %d, want 30", allowed)
	}
	f := info(t, s, w0+200, "k")
	if f["own_count"] != int64(30) || f["others_count"] != int64(70) || f["overshoot_bound"] != int64(12) {
		t.Fatalf("info: %v", f)
	}
	// The next window: the others' counts of the last one no longer count.
	if !globalDecide(t, s, w0+60_000, OpFixed, "k", true, p, 100).Allowed {
		t.Fatal("a new window")
	}
}

func TestGlobalSnapshotKeepsEverything(t *testing.T) {
	p := [3]int64{100, 60_000}
	region := NewShard()
	const t0 = 1_700_000_040_000
	globalDecide(t, region, t0, OpSliding, "k", false, p, 1)
	sc := scanGlobal(t, region, t0)
	q := GlobalLeaseRequest{Region: "eu", Algo: OpSliding, Params: p, Req: sc.Keys[0].NextReq, Demand: 7, Need: 5, Period: 1000, TTL: 5000}
	a := askHome(t, region, t0+1, "k", q) // the region is the key's home too
	install(t, region, t0+2, "k", GlobalInstall{Algo: OpSliding, Params: p, Req: q.Req, Base: sc.Now, Grant: a})
	globalDecide(t, region, t0+3, OpSliding, "k", false, p, 2)
	run(region, t0+4, (&GlobalCounts{Region: "us", Algo: OpFixed, Params: p, State: [3]int64{t0 - t0%60_000, 3}}).Command([]byte("rk")))
	globalDecide(t, region, t0+5, OpFixed, "r", true, p, 1)
	checkRestore(t, region)
}

// checkRestore restores s's snapshot and checks that the copy is the same,
// byte for byte, and charged the same.
func checkRestore(t *testing.T, s *Shard) {
	t.Helper()
	snap := s.AppendSnapshot(nil)
	c, err := RestoreShard(snap, SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	if again := c.AppendSnapshot(nil); string(again) != string(snap) {
		t.Fatal("the restored shard's snapshot differs")
	}
	if c.charged() != s.charged() {
		t.Fatalf("charged %d, restored %d", s.charged(), c.charged())
	}
	for cut := range len(snap) {
		RestoreShard(snap[:cut], SnapshotFormat) // must not panic
	}
}

// globalSeeds gives s a strict key it is the home of, with a block in
// force and one reported, and a relaxed key with another region's counts.
func globalSeeds(s *Shard, now int64) {
	p := [3]int64{100, 60_000}
	run(s, now, Command{Op: OpSliding, Key: []byte("gk"), Flags: FlagGlobal, Args: [4]int64{100, 60_000, 0, 1}})
	for j := range int64(2) {
		sc, _ := DecodeGlobalScan(&run(s, now+j, GlobalScanCommand(0, 10))[0])
		k := sc.Keys[0]
		q := GlobalLeaseRequest{Region: "eu", Algo: OpSliding, Params: p, Req: k.NextReq, Demand: 600, Need: 5,
			Period: 1000, TTL: 5000, Retired: k.Retired}
		a, _ := DecodeGlobalGrant(&run(s, now+j, q.Command([]byte("gk")))[0])
		in := GlobalInstall{Algo: OpSliding, Params: p, Req: q.Req, Base: sc.Now, Grant: a, Seal: true}
		run(s, now+j, in.Command([]byte("gk")), Command{Op: OpSliding, Key: []byte("gk"), Flags: FlagGlobal, Args: [4]int64{100, 60_000, 0, 2}})
	}
	c := GlobalCounts{Region: "us", Algo: OpFixed, Params: p, State: [3]int64{now - now%60_000, 3}, Peak: 2, Bound: 4}
	run(s, now, c.Command([]byte("rk")), Command{Op: OpFixed, Key: []byte("rk"), Flags: FlagGlobal | FlagRelaxed, Args: [4]int64{100, 60_000, 0, 1}})
}

// globalCommands are the federation's ops and decisions on key, for a
// fuzzed shard to be put through.
func globalCommands(key []byte) []Command {
	p := [3]int64{100, 60_000}
	lease := GlobalLeaseRequest{Region: "eu", Algo: OpSliding, Params: p, Req: 1 << 50, Demand: UnknownDemand, Need: 3,
		Period: 100, TTL: 1000, Floor: 2, Retired: []GlobalUse{{ID: 1, Used: 1}}}
	inst := GlobalInstall{Algo: OpSliding, Params: p, Req: 1 << 50, Grant: GlobalGrant{Block: 9, Units: 3, TTL: 100},
		FloorUnits: 2, FloorUntil: MaxTime, Retry: 50}
	counts := GlobalCounts{Region: "us", Algo: OpSliding, Params: p, State: [3]int64{0, 1, 1}}
	return []Command{
		{Op: OpSliding, Key: key, Flags: FlagGlobal, Args: [4]int64{100, 60_000, 0, 1}},
		{Op: OpFixed, Key: key, Flags: FlagGlobal | FlagRelaxed, Args: [4]int64{100, 60_000, 0, 1}},
		{Op: OpToken, Key: key, Flags: FlagGlobal | FlagPartial, Args: [4]int64{100, 10, 1000, 5}},
		lease.Command(key), inst.Command(key), counts.Command(key), GlobalScanCommand(0, 100),
		{Op: OpInfo, Key: key}, {Op: OpSliding, Key: key, Flags: FlagGlobal, Args: [4]int64{100, 60_000, 0, -1}},
	}
}

func TestGlobalOpsOnAnyKey(t *testing.T) {
	s := NewShard()
	globalSeeds(s, 1_700_000_000_000)
	for _, key := range []string{"gk", "rk", "new"} {
		for _, c := range globalCommands([]byte(key)) {
			if err := c.Check(); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
		}
		s.Apply(1_700_000_000_100, globalCommands([]byte(key)), make([]Result, len(globalCommands([]byte(key)))))
		checkCounters(t, s)
	}
	checkRestore(t, s)
}

func TestGlobalPartitionFloorIsCountedOnReturn(t *testing.T) {
	p := [3]int64{10, 60_000}
	region, home := NewShard(), NewShard()
	const t0 = 1_700_000_040_000
	globalDecide(t, region, t0, OpFixed, "k", false, p, 1)
	// Cut off, holding nothing: the federation gives it the floor.
	install(t, region, t0+10, "k", GlobalInstall{Algo: OpFixed, Params: p, FloorUnits: 4, FloorUntil: t0 + 210})
	n := 0
	for range 6 {
		if globalDecide(t, region, t0+20, OpFixed, "k", false, p, 1).Allowed {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("admitted %d under a floor of 4", n)
	}
	// Meanwhile another region took 8 of the 10 (7 and 1 more). Back, the
	// region reports its 4: the home counts them as far as it has room,
	// 2, and the ledger says 2 went over the limit.
	askHome(t, home, t0+30, "k", GlobalLeaseRequest{Region: "us", Algo: OpFixed, Params: p, Req: 1, Demand: UnknownDemand, Need: 7, Period: 100, TTL: 1000})
	sc := scanGlobal(t, region, t0+300)
	k := sc.Keys[0]
	if k.Floor != 4 {
		t.Fatalf("floor units to report: %+v", k)
	}
	q := GlobalLeaseRequest{Region: "eu", Algo: OpFixed, Params: p, Req: k.NextReq, Demand: 0, Need: 0, Period: 100, TTL: 1000, Floor: k.Floor}
	a := askHome(t, home, t0+310, "k", q)
	f := info(t, home, t0+320, "k")
	if f["region:eu:floor"] != int64(4) || f["region:eu:floor_over"] != int64(2) || f["home_available"] != int64(0) ||
		f["region:us:granted"] != int64(8) {
		t.Fatalf("home: %v", f)
	}
	install(t, region, t0+330, "k", GlobalInstall{Algo: OpFixed, Params: p, Req: q.Req, Base: sc.Now, Grant: a})
	if k := scanGlobal(t, region, t0+340).Keys[0]; k.Floor != 0 {
		t.Fatalf("the floor units reported stay: %+v", k)
	}
}

func TestGlobalPolicy(t *testing.T) {
	s := NewShard()
	set := Command{Op: OpPolicySet, Flags: FlagGlobal, Value: []byte("orders"), Args: [4]int64{100, 60_000, 0, int64(OpSliding)}}
	for _, bad := range []Command{
		{Op: OpPolicySet, Flags: FlagGlobal | FlagShadow, Value: []byte("x"), Args: [4]int64{100, 60_000, 0, int64(OpSliding)}},
		{Op: OpPolicySet, Flags: FlagGlobal, Value: []byte("x"), Args: [4]int64{100, 60_000, 0, int64(OpLog)}},
		{Op: OpPolicySet, Flags: FlagGlobal | FlagRelaxed, Value: []byte("x"), Args: [4]int64{10, 1, 1000, int64(OpToken)}},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v passes its check", bad)
		}
	}
	if err := set.Check(); err != nil {
		t.Fatal(err)
	}
	run(s, 1000, set)
	r := run(s, 1000, Command{Op: OpCheck, Key: []byte("k"), Value: []byte("orders"), Args: [4]int64{3: 1}})[0]
	if r.Type != ResDecision || r.Decision.Allowed || r.NExtras != 1 || r.Extras[0].Name != "shadow_denied" {
		t.Fatalf("RL.CHECK of a global policy, nothing held yet: %+v", r)
	}
	if f := info(t, s, 1000, "k"); f["mode"] != "strict" || f["global_algorithm"] != "rl.sliding" {
		t.Fatalf("the key is not global: %v", f)
	}
	forced := run(s, 1000, Command{Op: OpCheck, Flags: FlagForce, Key: []byte("k"), Value: []byte("orders"), Args: [4]int64{3: 1}})[0]
	if !errors.Is(forced.Err, ErrForceGlobal) {
		t.Fatalf("RL.CHECK FORCE of a global policy: %+v", forced)
	}
	list := run(s, 1000, Command{Op: OpPolicyList})[0]
	if len(list.Fields) != 1 || list.Fields[0].Text != "SLIDING 100 60000 GLOBAL" {
		t.Fatalf("RL.POLICY LIST: %+v", list)
	}
	checkRestore(t, s)
}
