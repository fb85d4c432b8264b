package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/backup"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
	"github.com/rlserver/rlserver/persistence"
)

// An online backup of a three-node cluster under load, restored into a new
// three-node cluster: every quota keeps its count exactly; every key under
// load holds at least the decisions answered before the backup began and at
// most those answered (or in flight) by its end; the policies come along;
// each restored node's DEBUG DIGEST is the digest of the state the file
// holds. A damaged or truncated file is refused and leaves nothing behind.
func TestBackupUnderLoadRestoreIntoNewCluster(t *testing.T) {
	src := startCluster(t, 3)
	c := src.clusterClient()
	ctx := context.Background()
	const quotas = 300
	for i := range quotas {
		if err := c.Do(ctx, "RL.QUOTA", fmt.Sprintf("q:%d", i), 1_000_000, "YEAR", "COST", i+1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, "RL.POLICY", "SET", "search", "SLIDING", 10, 60000).Err(); err != nil {
		t.Fatal(err)
	}

	// Load: four callers, each deciding round the keys of its own, counting
	// what was answered and what may have been counted (an error).
	const callers, keys = 4, 40
	var answered, uncertain [callers][keys]atomic.Int64
	loadCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; loadCtx.Err() == nil; n++ {
				k := n % keys
				if err := c.Do(loadCtx, "RL.QUOTA", fmt.Sprintf("load:%d:%d", g, k), 1_000_000, "YEAR").Err(); err != nil {
					uncertain[g][k].Add(1)
					continue
				}
				answered[g][k].Add(1)
			}
		}()
	}
	counts := func() (out [callers][keys]int64) {
		for g := range callers {
			for k := range keys {
				out[g][k] = answered[g][k].Load()
			}
		}
		return out
	}
	poll.Until(t, 20*time.Second, "every load key answered once", func() (bool, error) {
		return answered[callers-1][keys-1].Load() > 0, nil
	})
	before := counts()

	file := filepath.Join(t.TempDir(), "cluster.rlb")
	bin := src.Nodes[0].Config.Bin
	stdout, stderr, code, err := rlproc.Run(rlproc.Config{Bin: bin, Dir: t.TempDir(),
		Args: []string{"backup", "--addr", src.Nodes[1].Addr, "--out", file}}, time.Minute)
	if err != nil || code != 0 || !strings.Contains(stdout, "backup of 3 shards from "+src.Nodes[1].Addr+" written to "+file) {
		t.Fatalf("rlserver backup: %d %v\n%s\n%s", code, err, stdout, stderr)
	}
	after := counts()
	stop()
	wg.Wait()
	if after == before {
		t.Fatal("no decision was answered while the backup ran: it was not under load")
	}
	t.Logf("backup: %s %s", strings.TrimSpace(stdout), strings.TrimSpace(stderr))

	// The file's own digests: what every restored replica must hold.
	want := fileDigest(t, file)

	// A new cluster, each node restored from the file with its own settings.
	dst := newCluster(t, 3)
	for _, n := range dst.Nodes {
		out, errOut, code, err := rlproc.Run(rlproc.Config{Bin: n.Config.Bin, Dir: n.Config.Dir,
			Args: append([]string{"restore", "--in", file}, n.Config.Args...)}, time.Minute)
		if err != nil || code != 0 || !strings.Contains(out, "restored 3 of 3 shards") {
			t.Fatalf("restore %s: %d %v\n%s\n%s", n.ID, code, err, out, errOut)
		}
	}
	dst.Launch(t)
	dst.waitLeaders()
	for i := range dst.Nodes {
		if got, err := dst.client(i).Do(ctx, "DEBUG", "DIGEST").Text(); err != nil || got != want {
			t.Errorf("node %d: DEBUG DIGEST %s %v, the file's state %s", i+1, got, err, want)
		}
	}
	rc := dst.clusterClient()
	for i := range quotas {
		v, err := rc.Do(ctx, "RL.QUOTA", fmt.Sprintf("q:%d", i), 1_000_000, "YEAR", "COST", 0).Int64Slice()
		if err != nil || v[2] != 1_000_000-int64(i+1) {
			t.Fatalf("q:%d: remaining %v %v, want %d", i, v, err, 1_000_000-(i+1))
		}
	}
	for g := range callers {
		for k := range keys {
			v, err := rc.Do(ctx, "RL.QUOTA", fmt.Sprintf("load:%d:%d", g, k), 1_000_000, "YEAR", "COST", 0).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			counted := 1_000_000 - v[2]
			lo, hi := before[g][k], after[g][k]+uncertain[g][k].Load()+1
			if counted < lo || counted > hi {
				t.Errorf("load:%d:%d: %d counted after the restore; answered %d before the backup, %d by its end (+%d uncertain)",
					g, k, counted, lo, after[g][k], uncertain[g][k].Load())
			}
		}
	}
	if def, err := rc.Do(ctx, "RL.POLICY", "GET", "search").Slice(); err != nil || fmt.Sprint(def[1]) != "SLIDING 10 60000" {
		t.Errorf("policy search: %v %v", def, err)
	}

	// Damaged and truncated files are refused, and no data directory made.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), data...)
	damaged[len(damaged)/2] ^= 0x01
	for _, bad := range []struct {
		name string
		data []byte
		want string
	}{
		{"damaged", damaged, "damaged"},
		{"truncated", data[:len(data)*2/3], "truncated"},
		{"not a backup", []byte("hello"), "truncated"},
	} {
		path := filepath.Join(t.TempDir(), bad.name+".rlb")
		if err := os.WriteFile(path, bad.data, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "data")
		_, errOut, code, err := rlproc.Run(rlproc.Config{Bin: bin, Dir: t.TempDir(),
			Args: []string{"restore", "--in", path, "--data-dir", dir}}, time.Minute)
		if err != nil || code != 1 || !strings.Contains(errOut, "bad backup file: "+bad.want) {
			t.Errorf("restore of a %s file: exit %d %v: %s", bad.name, code, err, errOut)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("restore of a %s file left %s behind", bad.name, dir)
		}
	}
	// And a data directory that holds a node is never written over.
	_, errOut, code, _ := rlproc.Run(rlproc.Config{Bin: bin, Dir: t.TempDir(),
		Args: append([]string{"restore", "--in", file}, dst.Nodes[0].Config.Args...)}, time.Minute)
	if code != 1 || !strings.Contains(errOut, "already holds a node's data") {
		t.Errorf("restore over a node's data: exit %d: %s", code, errOut)
	}
}

// fileDigest is DEBUG DIGEST of the state a backup file holds, computed as
// the server computes it from its shards.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := backup.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for {
		s, frame, err := r.Next()
		if errors.Is(err, io.EOF) {
			return hex.EncodeToString(h.Sum(nil))
		}
		if err != nil {
			t.Fatal(err)
		}
		payload, format, err := persistence.ReadSnapshot(frame)
		if err != nil {
			t.Fatal(err)
		}
		shard, err := engine.RestoreShard(payload, int(format))
		if err != nil {
			t.Fatal(err)
		}
		d := shard.Inspect(&engine.Command{Op: engine.OpDigest})
		fmt.Fprintf(h, "%d:%s;", s.Shard, d.Text)
		if _, err := io.Copy(io.Discard, frame); err != nil { // the section's checksum
			t.Fatal(err)
		}
	}
}

// A memory node's state, backed up with a password from the environment,
// restored into a durable single node: every count kept. Without the
// password the backup is refused; a restore into another shard count is
// refused.
func TestBackupOfMemoryNodeIntoDurableNode(t *testing.T) {
	t.Parallel()
	src := rlproc.Launch(t, rlproc.Config{Dir: t.TempDir(), Args: []string{"--in-memory", "--port", "0", "--shards", "3", "--requirepass", "s3cret"}})
	c := redisClient(t, src.Addr, "s3cret")
	ctx := context.Background()
	for i := range 100 {
		if err := c.Do(ctx, "RL.TOKEN", fmt.Sprintf("t:%d", i), 1000, 1, 3_600_000, "COST", i+1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	bin := rlproc.Binary(t)
	file := filepath.Join(t.TempDir(), "memory.rlb")
	backupArgs := []string{"backup", "--addr", src.Addr, "--out", file, "--quiet"}
	if _, stderr, code, _ := rlproc.Run(rlproc.Config{Bin: bin, Dir: t.TempDir(), Args: backupArgs}, time.Minute); code != 1 || !strings.Contains(stderr, "NOAUTH") {
		t.Errorf("backup without the password: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed backup left %s", file)
	}
	stdout, stderr, code, err := rlproc.Run(rlproc.Config{Bin: bin, Dir: t.TempDir(), Args: backupArgs,
		Wrap: []string{"env", "RLSERVER_BACKUP_PASSWORD=s3cret"}}, time.Minute)
	if err != nil || code != 0 || stderr != "" || !strings.Contains(stdout, "backup of 3 shards") {
		t.Fatalf("backup: %d %v %q %q", code, err, stdout, stderr)
	}

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if _, stderr, code, _ := rlproc.Run(rlproc.Config{Bin: bin, Dir: dir, Args: []string{"restore", "--in", file, "--data-dir", data, "--shards", "4"}}, time.Minute); code != 2 || !strings.Contains(stderr, "the backup holds 3 shards") {
		t.Errorf("restore into 4 shards: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code, _ := rlproc.Run(rlproc.Config{Bin: bin, Dir: dir, Args: []string{"restore", "--in", file, "--data-dir", data}}, time.Minute); code != 0 {
		t.Fatalf("restore: exit %d: %s %s", code, stdout, stderr)
	}
	dst := rlproc.Launch(t, rlproc.Config{Bin: bin, Dir: dir, Args: []string{"--port", "0", "--data-dir", data}})
	d := redisClient(t, dst.Addr, "")
	for i := range 100 {
		v, err := d.Do(ctx, "RL.TOKEN", fmt.Sprintf("t:%d", i), 1000, 1, 3_600_000, "COST", 0).Int64Slice()
		// An hour refills one token: none has come back since.
		if err != nil || v[2] != 1000-int64(i+1) {
			t.Fatalf("t:%d after the restore: %v %v, want %d remaining", i, v, err, 1000-(i+1))
		}
	}
}

// redisClient is a go-redis client for a single node at addr, with pass
// when it is not empty; closed when the test ends.
func redisClient(t *testing.T, addr, pass string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: pass, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}
