package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testcert"
	"github.com/rlserver/rlserver/internal/wire"
)

// nodeTLS gives each of n nodes a certificate from ca.
func nodeTLS(t *testing.T, ca *testcert.CA, n int) []*BusTLS {
	out := make([]*BusTLS, n)
	for i := range out {
		out[i] = &BusTLS{Certificate: ca.Issue(t, "node").TLS(t), CAs: ca.Pool()}
	}
	return out
}

// With mutual TLS on the bus, the nodes elect leaders and forward requests
// as without it; a process without a certificate from the cluster's CA can
// neither ask a node for anything nor take part in the groups, and the
// cluster goes on working around it.
func TestBusMutualTLS(t *testing.T) {
	ca := testcert.NewCA(t, "cluster CA")
	tc := startSecureTestCluster(t, 3, 2, nodeTLS(t, ca, 3))
	for shard := range 2 {
		tc.leaderOf(shard)
		for i := range 3 { // through the leader and forwarded by the others
			tc.serve(i, shard, sliding("k", 100, 60_000))
		}
	}

	fp := Fingerprint(tc.members, tc.shards)
	if refusedStatus(t, newBusDialer(tcpDial, fp, tc.busTLS[1]), tc.members[0].Bus) == nil {
		t.Fatal("a member was refused a status: the intruders' refusals below would prove nothing")
	}
	foreign := testcert.NewCA(t, "another CA")
	for _, intruder := range []struct {
		name string
		sec  *BusTLS
	}{
		{"plain TCP", nil},
		{"a certificate from another CA", &BusTLS{Certificate: foreign.Issue(t, "intruder").TLS(t), CAs: ca.Pool()}},
		{"no certificate", &BusTLS{CAs: ca.Pool()}},
	} {
		d := newBusDialer(tcpDial, fp, intruder.sec)
		if intruder.sec != nil && intruder.sec.Certificate.Certificate == nil {
			d.tls.Certificates = nil
		}
		if refusedStatus(t, d, tc.members[0].Bus) != nil {
			t.Errorf("%s: a node answered the intruder", intruder.name)
		}
	}

	// An impostor takes n3's place, on its data directory, with a
	// certificate the others do not trust: it never reaches a leader, and
	// the others carry on. (On an empty data directory it would not even
	// start: a new node waits for the other members to say it is new.)
	tc.crash(2)
	real := tc.busTLS[2]
	tc.busTLS[2] = &BusTLS{Certificate: foreign.Issue(t, "impostor").TLS(t), CAs: foreign.Pool()}
	tc.start(2, nil)
	if _, err := tc.call(2, 0, sliding("k", 100, 60_000)); !errors.Is(err, ErrNotApplied) {
		t.Fatalf("a request through the impostor: %v, want ErrNotApplied", err)
	}
	for shard := range 2 {
		for i := range 2 { // beside the impostor
			tc.serve(i, shard, sliding("k", 100, 60_000))
		}
	}

	// The real n3 comes back and catches up.
	tc.crash(2)
	tc.busTLS[2] = real
	tc.start(2, nil)
	for shard := range 2 {
		tc.converge(shard)
	}
}

// refusedStatus asks the node at addr for its status through d; nil when
// the node refused (the connection failed or closed unanswered).
func refusedStatus(t *testing.T, d busDialer, addr string) []byte {
	t.Helper()
	conn, err := d.open(addr, streamControl, 0, 2*time.Second)
	if err != nil {
		return nil
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeFrame(conn, wire.AppendString(wire.AppendString([]byte{frameStatus}, "intruder"), "")); err != nil {
		return nil
	}
	reply, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		return nil
	}
	return reply
}

// The same certificate serves both ends, whatever its key usage says, and
// the peer's host name is not checked; a chain to another CA is refused.
func TestBusTLSVerify(t *testing.T) {
	ca, other := testcert.NewCA(t, "ca"), testcert.NewCA(t, "other")
	sec := &BusTLS{Certificate: ca.Issue(t, "n1").TLS(t), CAs: ca.Pool()}
	if err := sec.verify(sec.Certificate.Certificate, nil); err != nil {
		t.Errorf("a certificate from the CA: %v", err)
	}
	if err := sec.verify(other.Issue(t, "x", "127.0.0.1").TLS(t).Certificate, nil); err == nil {
		t.Error("a certificate from another CA was accepted")
	}
	if err := sec.verify(nil, nil); !errors.Is(err, errNoPeerCertificate) {
		t.Errorf("no certificate: %v", err)
	}
	if sec.client().MinVersion < tls.VersionTLS12 || sec.server().ClientAuth != tls.RequireAnyClientCert {
		t.Error("weak bus TLS configuration")
	}
}
