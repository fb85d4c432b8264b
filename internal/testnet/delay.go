package testnet

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy is a TCP proxy that delays every byte by a set time in each
// direction, as a link between regions does: what is read at t is written
// at t + delay, in order, however much arrives meanwhile (the delay is
// latency, not a bandwidth limit). It can be cut (every connection
// severed, new ones refused) and healed. Tests and benchmarks stand one
// between each pair of regions of a federation on one machine.
type DelayProxy struct {
	ln     net.Listener
	delay  atomic.Int64 // ns, each way
	target atomic.Pointer[string]

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewDelayProxy listens on a free loopback port and forwards to the target
// set by SetTarget, each byte delay late in each direction.
func NewDelayProxy(delay time.Duration) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.delay.Store(int64(delay))
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where the proxy listens.
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

// SetTarget sets the address new connections are forwarded to; until it
// is set, they are refused.
func (p *DelayProxy) SetTarget(addr string) { p.target.Store(&addr) }

// SetDelay changes the delay each way, for bytes read from now on.
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Cut severs every connection and refuses new ones until Heal.
func (p *DelayProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal accepts connections again.
func (p *DelayProxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and severs its connections.
func (p *DelayProxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		t := p.target.Load()
		if t == nil || !p.track(c) {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", *t)
		if err != nil || !p.track(up) {
			c.Close()
			if up != nil {
				up.Close()
			}
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track records c, to be severed by Cut: false while the proxy is cut.
func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// chunk is bytes read, and when they may be written.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies from to to, each chunk delay late; when either side ends,
// both are closed.
func (p *DelayProxy) pipe(from, to net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			time.Sleep(time.Until(c.at)) // the link's latency itself
			if _, err := to.Write(c.b); err != nil {
				break
			}
		}
		from.Close()
		to.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			q <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now().Add(time.Duration(p.delay.Load()))}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				to.Close()
			}
			break
		}
	}
	close(q)
	<-done
	p.mu.Lock()
	delete(p.conns, from)
	delete(p.conns, to)
	p.mu.Unlock()
}
