package testnet

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on a free port and returns its address.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestDelayProxyDelaysAndCuts(t *testing.T) {
	p, err := NewDelayProxy(30 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetTarget(echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for range 3 {
		start := time.Now()
		c.Write([]byte("ping\n"))
		if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
			t.Fatalf("%q %v", line, err)
		}
		if rtt := time.Since(start); rtt < 60*time.Millisecond || rtt > time.Second {
			t.Fatalf("round trip %v, want about 60ms", rtt)
		}
	}
	p.Cut()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a cut connection still reads")
	}
	d, err := net.Dial("tcp", p.Addr())
	if err == nil {
		d.SetReadDeadline(time.Now().Add(5 * time.Second))
		d.Write([]byte("x\n"))
		if _, err := bufio.NewReader(d).ReadString('\n'); err == nil {
			t.Fatal("a connection through a cut proxy works")
		}
		d.Close()
	}
	p.Heal()
	p.SetDelay(0)
	d, err = net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Write([]byte("back\n"))
	if line, err := bufio.NewReader(d).ReadString('\n'); err != nil || line != "back\n" {
		t.Fatalf("healed: %q %v", line, err)
	}
}
