package tests

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testcert"
)

// busTLSArgs are a node's --tls-cluster flags, with a certificate of its
// own from ca, written to dir.
func busTLSArgs(t *testing.T, ca *testcert.CA, dir, name string) []string {
	cert, key := ca.Issue(t, name).Write(t, dir, name)
	return []string{"--tls-cluster", "yes", "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca.Write(t, dir, "ca.crt")}
}

// A three-node cluster whose bus speaks mutual TLS (--tls-cluster yes)
// elects leaders, forwards and replicates as without it. An impostor that
// takes a node's place with a certificate from another CA, its settings
// otherwise the same, cannot take part: a command through it finds no
// leader and is refused, never counted, while the two genuine nodes go on
// deciding and log the refusals; a plain TCP connection to the bus is
// dropped. The genuine node, back, catches up.
func TestClusterMutualTLS(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t, "cluster CA")
	tc := newCluster(t, 2)
	for _, n := range tc.Nodes {
		n.Config.Args = append(n.Config.Args, busTLSArgs(t, ca, t.TempDir(), n.ID)...)
	}
	tc.Launch(t)
	c0 := tc.client(0)
	keys := []string{keyOnShard(t, c0, "mtls", 0, 2), keyOnShard(t, c0, "mtls", 1, 2)}
	for i := range 3 {
		for _, k := range keys { // led by some node, forwarded by the others
			if d := decide(t, tc.client(i), "RL.SLIDING "+k+" 100 60000"); !d.Allowed {
				t.Fatalf("through n%d, %s: %v", i+1, k, d)
			}
		}
	}

	// A plain TCP connection to the bus: no handshake, no header read.
	bus := dialRaw(t, tc.Nodes[0].BusAddr)
	bus.send("rlF\x00\x00intruder")
	bus.expectClosed()

	tc.stop(2)
	impostorArgs := slices.Clone(tc.Nodes[2].Config.Args)
	for i, a := range impostorArgs {
		if a == "--data-dir" {
			impostorArgs[i+1] = filepath.Join(t.TempDir(), "data")
		}
	}
	foreign := testcert.NewCA(t, "another CA")
	impostorArgs = append(impostorArgs, busTLSArgs(t, foreign, t.TempDir(), "n3")...) // the last flags win
	impostor := launch(t, t.TempDir(), impostorArgs...)
	start := time.Now()
	// It waits for a leader as long as rlserver waits (5 s) before refusing.
	slow := impostor.Client(t, 2, func(o *redis.Options) { o.ReadTimeout = 15 * time.Second })
	got := doErr(t, slow, "RL.SLIDING", keys[0], 100, 60000)
	if !strings.HasPrefix(got, "TRYAGAIN") && !strings.HasPrefix(got, "CLUSTERDOWN") {
		t.Errorf("a decision through the impostor: %q (after %v), want TRYAGAIN or CLUSTERDOWN", got, time.Since(start))
	}
	for i := range 2 {
		for _, k := range keys {
			if d := decide(t, tc.client(i), "RL.SLIDING "+k+" 100 60000"); !d.Allowed {
				t.Fatalf("through n%d beside the impostor, %s: %v", i+1, k, d)
			}
		}
	}
	poll.Until(t, 10*time.Second, "a genuine node to log the impostor's refusal", func() (bool, error) {
		return strings.Contains(tc.node(0).Log()+tc.node(1).Log(), "refused a bus connection that failed mutual TLS"), nil
	})
	impostor.Stop(t)

	tc.start(2)
	tc.waitLeaders()
	tc.converge()
	// 3 + 2 decisions on each key, none through the impostor.
	for _, k := range keys {
		if d := decide(t, tc.client(2), "RL.SLIDING "+k+" 100 60000 COST 0"); d.Remaining != 95 {
			t.Errorf("%s: remaining %d, want 95: the impostor's request was counted, or a decision lost", k, d.Remaining)
		}
	}
}
