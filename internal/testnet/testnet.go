// Package testnet is the network between the in-process nodes of a test's
// cluster: it can cut a node off, refusing its new connections and severing
// the open ones, in both directions, and heal it again.
package testnet

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrCut is what a dial across a cut link returns.
var ErrCut = errors.New("testnet: link cut")

// Net connects nodes, each known by its id and reached at its address.
type Net struct {
	mu     sync.Mutex
	cut    map[string]bool // node ids cut off
	byAddr map[string]string
	conns  map[string][]net.Conn // open connections by the ids at either end
}

// New returns a network with every node connected.
func New() *Net {
	return &Net{cut: map[string]bool{}, byAddr: map[string]string{}, conns: map[string][]net.Conn{}}
}

// Name records that node id is reached at addr.
func (tn *Net) Name(addr, id string) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.byAddr[addr] = id
}

// Dialer is node from's way out: it dials over TCP, unless from or the node
// at addr is cut off.
func (tn *Net) Dialer(from string) func(addr string, timeout time.Duration) (net.Conn, error) {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		tn.mu.Lock()
		to := tn.byAddr[addr]
		blocked := tn.cut[from] || tn.cut[to]
		tn.mu.Unlock()
		if blocked {
			return nil, ErrCut
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		tn.mu.Lock()
		defer tn.mu.Unlock()
		// Cut while dialling: Isolate has already closed the links it knew
		// of, and this one must not outlive the cut.
		if tn.cut[from] || tn.cut[to] {
			c.Close()
			return nil, ErrCut
		}
		tn.conns[from] = append(tn.conns[from], c)
		tn.conns[to] = append(tn.conns[to], c)
		return c, nil
	}
}

// Isolate cuts node id off from every other node.
func (tn *Net) Isolate(id string) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.cut[id] = true
	for _, c := range tn.conns[id] {
		c.Close()
	}
	tn.conns[id] = nil
}

// Heal connects node id again.
func (tn *Net) Heal(id string) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	delete(tn.cut, id)
}
