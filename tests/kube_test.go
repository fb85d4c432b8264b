//go:build linux

package tests

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testcert"
	"golang.org/x/net/dns/dnsmessage"
)

// What Kubernetes gives a StatefulSet's pods besides their containers, for
// the StatefulSet emulation (statefulset_test.go): the cluster's DNS, the
// Services' virtual addresses (kube-proxy), and the API server a pod reads
// its StatefulSet from with its service account. Each serves on the
// gateway of the test's podman network, the host's address on it, which
// the containers reach and nothing outside the machine does.
//
// The DNS is the test's own, as a cluster's is (CoreDNS answers from the
// API's records of pods and Services), and not podman's aardvark-dns:
// Debian 12's aardvark-dns 1.4 stops answering for seconds at a time
// whenever a container joins or leaves its network (it tears its sockets
// down at every reload: containers/aardvark-dns#389, fixed in 1.11).
// Measured here with the chart's pods: after a rolling restart's pod came
// back, every lookup of every peer's name from a surviving pod timed out
// for 30-50 s (read udp ...->10.89.0.1:53: i/o timeout, in 1 restart of 3
// or 4), so the pod was not ready for that long, with or without
// --dns-option timeout:1 attempts:5. Static addresses in /etc/hosts would
// answer at once, but a pod's address must change when it is replaced,
// and its peers must find the new one by name, as in Kubernetes.

// clusterDomain is the cluster's DNS domain, Kubernetes' default.
const clusterDomain = "cluster.local"

// listenGateway listens on addr, an address on the test's podman network
// (its gateway), even while the address does not exist: netavark makes the
// network's bridge, which holds it, when the first container starts, and
// removes it when the last one stops. A socket bound with IP_FREEBIND is
// served again once the address is back.
func listenGateway(t *testing.T, network, addr string) (net.Listener, net.PacketConn) {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_FREEBIND, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	if strings.HasPrefix(network, "udp") {
		pc, err := lc.ListenPacket(context.Background(), network, addr)
		if err != nil {
			t.Fatalf("listen on %s/%s: %v", addr, network, err)
		}
		t.Cleanup(func() { pc.Close() })
		return nil, pc
	}
	ln, err := lc.Listen(context.Background(), network, addr)
	if err != nil {
		t.Fatalf("listen on %s/%s: %v", addr, network, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, nil
}

// clusterDNS answers the pods' queries as a cluster's DNS does: each name
// under clusterDomain it was given with its IPv4 addresses (A), nothing
// else for it (AAAA), and NXDOMAIN for every other name (the pods need no
// other). It serves UDP on port 53 of addr: a resolv.conf names no port.
type clusterDNS struct {
	conn net.PacketConn

	mu      sync.Mutex
	records map[string][]netip.Addr // by fully qualified name, lower case
}

// startClusterDNS serves on addr:53 until the test ends.
func startClusterDNS(t *testing.T, addr string) *clusterDNS {
	t.Helper()
	_, pc := listenGateway(t, "udp4", net.JoinHostPort(addr, "53"))
	d := &clusterDNS{conn: pc, records: map[string][]netip.Addr{}}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		d.serve()
	}()
	return d
}

// set makes name (under clusterDomain: "rl-0.rl-headless.default.svc")
// resolve to ips; none removes it.
func (d *clusterDNS) set(name string, ips ...string) {
	fqdn := strings.ToLower(name + "." + clusterDomain + ".")
	var addrs []netip.Addr
	for _, ip := range ips {
		addrs = append(addrs, netip.MustParseAddr(ip))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(addrs) == 0 {
		delete(d.records, fqdn)
		return
	}
	d.records[fqdn] = addrs
}

// serve answers queries until the connection is closed.
func (d *clusterDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply, err := d.answer(buf[:n]); err == nil {
			d.conn.WriteTo(reply, from) // a reply lost is asked again
		}
	}
}

// answer is the reply to one query.
func (d *clusterDNS) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	reply := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired},
		Questions: []dnsmessage.Question{q},
	}
	d.mu.Lock()
	addrs, known := d.records[strings.ToLower(q.Name.String())]
	d.mu.Unlock()
	switch {
	case !known:
		reply.RCode = dnsmessage.RCodeNameError
	case q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET:
		for _, a := range addrs {
			reply.Answers = append(reply.Answers, dnsmessage.Resource{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
				Body:   &dnsmessage.AResource{A: a.As4()},
			})
		}
	}
	return reply.Pack()
}

// serviceProxy is one port of a Service's virtual address, as kube-proxy
// serves it: each connection goes to the target port of one of the
// Service's endpoints, picked at random when it comes; with none, the
// connection is closed at once.
type serviceProxy struct {
	ln        net.Listener
	target    int
	endpoints func() []string // the endpoints' addresses

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// startServiceProxy serves addr (the Service's address and port) until
// the test ends.
func startServiceProxy(t *testing.T, addr string, target int, endpoints func() []string) {
	t.Helper()
	ln, _ := listenGateway(t, "tcp4", addr)
	p := &serviceProxy{ln: ln, target: target, endpoints: endpoints, conns: map[net.Conn]bool{}}
	t.Cleanup(p.close)
	p.wg.Go(p.accept)
}

// accept takes connections until the listener is closed.
func (p *serviceProxy) accept() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.forward(conn) })
	}
}

// forward joins conn to one of the endpoints until either end closes.
func (p *serviceProxy) forward(conn net.Conn) {
	defer conn.Close()
	eps := p.endpoints()
	if len(eps) == 0 {
		return
	}
	up, err := net.DialTimeout("tcp", net.JoinHostPort(eps[rand.IntN(len(eps))], fmt.Sprint(p.target)), 2*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(conn, up) {
		return
	}
	defer p.untrack(conn, up)
	done := make(chan struct{}, 2)
	for _, pair := range [][2]net.Conn{{up, conn}, {conn, up}} {
		go func() {
			io.Copy(pair[0], pair[1])
			done <- struct{}{}
		}()
	}
	<-done // one way ended: end the other
	conn.Close()
	up.Close()
	<-done
}

// track records open connections, for close; false once closed.
func (p *serviceProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

func (p *serviceProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// close stops serving and ends every connection.
func (p *serviceProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// apiServer is the part of the Kubernetes API the pods use: GET of their
// own StatefulSet (the chart's Role allows nothing else), for its
// .spec.replicas (--desired-nodes-statefulset), with their service
// account's token, over HTTPS with a certificate of the cluster's CA.
type apiServer struct {
	Host, Port string // KUBERNETES_SERVICE_HOST and _PORT
	// AccountDir holds the service account as the kubelet mounts it in
	// every pod: token, ca.crt, namespace.
	AccountDir string

	namespace, statefulSet, token string
	replicas                      atomic.Int32
	gets                          atomic.Int64 // answered with the StatefulSet
}

// serviceAccountPath is where the kubelet mounts a pod's service account.
const serviceAccountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// startAPIServer serves namespace/statefulSet, with replicas, on a free
// port of addr until the test ends.
func startAPIServer(t *testing.T, addr, namespace, statefulSet string, replicas int) *apiServer {
	t.Helper()
	ca := testcert.NewCA(t, "kubernetes-ca")
	pair := ca.Issue(t, "kube-apiserver", addr)
	a := &apiServer{namespace: namespace, statefulSet: statefulSet, token: fmt.Sprintf("token-%d", rand.Int64())}
	a.replicas.Store(int32(replicas))
	a.AccountDir = t.TempDir()
	// The pods run as another user than the test: the directory and its
	// files must be readable by any.
	for name, content := range map[string]string{"token": a.token, "ca.crt": string(ca.PEM), "namespace": namespace} {
		if err := os.WriteFile(filepath.Join(a.AccountDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(a.AccountDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, _ := listenGateway(t, "tcp4", net.JoinHostPort(addr, "0"))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair.TLS(t)}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	a.Host, a.Port, _ = net.SplitHostPort(ln.Addr().String())
	return a
}

// setReplicas changes the StatefulSet's .spec.replicas, as helm upgrade
// --set replicas=n or kubectl scale does.
func (a *apiServer) setReplicas(n int) { a.replicas.Store(int32(n)) }

// serve answers GET /apis/apps/v1/namespaces/<ns>/statefulsets/<name> as
// the API server does for the pods' service account.
func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	status := func(code int, reason string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code})
	}
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		status(http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != fmt.Sprintf("/apis/apps/v1/namespaces/%s/statefulsets/%s", a.namespace, a.statefulSet) {
		status(http.StatusForbidden, "Forbidden")
		return
	}
	a.gets.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": a.statefulSet, "namespace": a.namespace},
		"spec":     map[string]any{"replicas": a.replicas.Load()},
	})
}
