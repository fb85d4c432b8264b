package tests

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A durable node that snapshots every few tens of milliseconds (whatever
// its state's size: --raft-snapshot-log-percentage 0) under a
// steady load answers every decision (a snapshot never stops a shard long
// enough for a TRYAGAIN), its snapshots overlap the load (the shard copied
// chunks it wrote while one was written), and restarted from its snapshots
// and logs it holds the state it had.
func TestSnapshotsUnderLoadAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--port", "0", "--bind", "127.0.0.1", "--shards", "2", "--enable-debug-command",
		"--raft-snapshot-interval", "20ms", "--raft-snapshot-threshold", "1", "--raft-snapshot-log-percentage", "0"}
	first := launch(t, dir, args...)
	c := first.Client(t, 2)
	ctx := context.Background()
	const keys = 20_000
	decideAll := func(from, n int) error {
		p := c.Pipeline()
		for i := from; i < from+n; i++ {
			p.Do(ctx, "RL.SLIDING", "user:"+strconv.Itoa(i%keys), 1_000_000, 3_600_000)
		}
		_, err := p.Exec(ctx)
		return err
	}
	for from := 0; from < keys; from += 1000 {
		if err := decideAll(from, 1000); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for from := 0; ; from += 500 {
			select {
			case <-stop:
				return
			default:
			}
			if err := decideAll(from, 500); err != nil {
				errs <- err
				return
			}
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(first.Log(), "shard snapshot written") < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("a decision during the snapshots: %v", err)
	default:
	}
	if n := strings.Count(first.Log(), "shard snapshot written"); n < 10 {
		t.Fatalf("%d snapshots written in a minute; log:\n%s", n, first.Log())
	}
	if copies := infoInt(t, c, "persistence", "rl_snapshot_chunk_copies"); copies == 0 {
		t.Errorf("no chunk copied: no snapshot overlapped the load")
	}
	want, err := c.Do(ctx, "DEBUG", "DIGEST").Text()
	if err != nil {
		t.Fatal(err)
	}
	if code := first.Stop(t); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, first.Log())
	}

	second := launch(t, dir, args...)
	c2 := second.Client(t, 2)
	if got, err := c2.Do(ctx, "DEBUG", "DIGEST").Text(); err != nil || got != want {
		t.Errorf("after a restart DEBUG DIGEST %s %v, before %s", got, err, want)
	}
	// INFO raft says, for each shard, the size of the snapshot it restored
	// and what its log has gained since, which pace the next snapshot.
	raftInfo := infoText(t, c2, "raft")
	for shard := range 2 {
		line := ""
		for _, l := range raftInfo {
			if v, ok := strings.CutPrefix(l, "shard_"+strconv.Itoa(shard)+":"); ok {
				line = v
			}
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(line, ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		if n, err := strconv.ParseInt(fields["snapshot_bytes"], 10, 64); err != nil || n <= 0 {
			t.Errorf("INFO raft shard_%d: snapshot_bytes %q, want the restored snapshot's size: %q", shard, fields["snapshot_bytes"], line)
		}
		if _, err := strconv.ParseInt(fields["log_bytes"], 10, 64); err != nil {
			t.Errorf("INFO raft shard_%d: log_bytes %q: %q", shard, fields["log_bytes"], line)
		}
	}
}
