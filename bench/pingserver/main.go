//go:build linux

// Command pingserver is the least a Go server can do per RESP command: it
// answers PING with +PONG and nothing else, parsing with redcon as rlserver
// does. bench/floor measures it beside redis-server and rlserver to split
// what a decision costs into the connection model's share and the
// command's own. It serves in one of two ways:
//
//	pingserver -port 17003 -model goroutines  # a goroutine per connection, as rlserver once did
//	pingserver -port 17003 -model epoll       # one event loop on epoll, as Redis
//
// With -answer it answers every other command, whatever it is, with a fixed
// reply of that shape: an integer as INCR's, or an RL.SLIDING decision. No server
// can answer for less, so redis-benchmark against it measures the load
// generator's own ceiling for that command on this machine:
//
//	pingserver -model epoll -answer decision  # *5 :1 :100 :99 :0 :60000
//
// The goroutine model reads through Go's network poller: a read that finds
// nothing parks the goroutine, and the scheduler wakes it when epoll says
// the socket is readable. The epoll model is one goroutine on its own
// thread that waits in epoll_wait, reads every readable socket and writes
// its replies, never parking.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/tidwall/redcon"
	"golang.org/x/sys/unix"
)

func main() {
	port := flag.Int("port", 17003, "TCP port on 127.0.0.1")
	model := flag.String("model", "goroutines", "goroutines (one per connection) or epoll (one event loop)")
	answerWith := flag.String("answer", "", "answer every command but PING with: integer (as INCR) or decision (as RL.SLIDING); default: PING alone")
	flag.Parse()
	var err error
	switch *answerWith {
	case "":
	case "integer":
		fixed = []byte(":1\r\n")
	case "decision":
		fixed = []byte("*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:60000\r\n")
	default:
		fmt.Fprintf(os.Stderr, "pingserver: unknown -answer %q: integer or decision\n", *answerWith)
		os.Exit(2)
	}
	switch *model {
	case "goroutines":
		err = serveGoroutines(*port)
	case "epoll":
		err = serveEpoll(*port)
	default:
		err = fmt.Errorf("unknown -model %q: goroutines or epoll", *model)
	}
	fmt.Fprintln(os.Stderr, "pingserver:", err)
	os.Exit(1)
}

// readSize is what a connection reads at a time, as rlserver's loop.
const readSize = 16 << 10

// fixed, when set (-answer), is the reply to every command.
var fixed []byte

// answer appends the replies of every complete command in in to out and
// returns the bytes of an incomplete last one. args is the connection's
// buffer for a command's arguments. It is the same for both models, so that
// they differ only in how bytes come and go.
func answer(in, out []byte, args *[][]byte) (rest, replies []byte, err error) {
	for {
		complete, parsed, _, leftover, err := redcon.ReadNextCommand(in, (*args)[:0])
		if err != nil || !complete {
			return in, out, err
		}
		*args = parsed[:0]
		in = leftover
		switch {
		case len(parsed) == 0:
		case len(parsed) == 1 && strings.EqualFold(string(parsed[0]), "ping"):
			out = append(out, "+PONG\r\n"...)
		case fixed != nil:
			out = append(out, fixed...)
		default:
			out = append(out, "-ERR pingserver answers PING only\r\n"...)
		}
	}
}

// serveGoroutines answers each connection on a goroutine of its own.
func serveGoroutines(port int) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go serveConn(c)
	}
}

func serveConn(c net.Conn) {
	defer c.Close()
	in := make([]byte, readSize)
	var out []byte
	var args [][]byte
	kept := 0
	for {
		if kept == len(in) {
			in = append(in, make([]byte, len(in))...)
		}
		n, err := c.Read(in[kept:])
		if n == 0 {
			return
		}
		rest, replies, perr := answer(in[:kept+n], out[:0], &args)
		if perr != nil {
			return
		}
		if len(replies) > 0 {
			if _, err := c.Write(replies); err != nil {
				return
			}
		}
		out = replies
		kept = copy(in, rest)
		if err != nil {
			return
		}
	}
}

// epollConn is one connection of the event loop.
type epollConn struct {
	in   []byte
	kept int
	args [][]byte
}

// serveEpoll answers every connection on one event loop: a goroutine
// locked to its thread, accepting, reading and writing on non-blocking
// sockets.
func serveEpoll(port int) error {
	runtime.LockOSThread()
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.SetsockoptInt(lfd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return err
	}
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := unix.Listen(lfd, 1024); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	conns := map[int32]*epollConn{}
	events := make([]unix.EpollEvent, 256)
	var out []byte
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(lfd) {
				acceptAll(lfd, ep, conns)
				continue
			}
			c := conns[ev.Fd]
			if c == nil {
				continue
			}
			fd := int(ev.Fd)
			if c.kept == len(c.in) {
				c.in = append(c.in, make([]byte, len(c.in))...)
			}
			r, err := unix.Read(fd, c.in[c.kept:])
			if errors.Is(err, unix.EAGAIN) {
				continue
			}
			if r <= 0 {
				closeConn(fd, conns)
				continue
			}
			var rest []byte
			rest, out, err = answer(c.in[:c.kept+r], out[:0], &c.args)
			if writeAll(fd, out) != nil || err != nil {
				closeConn(fd, conns)
				continue
			}
			c.kept = copy(c.in, rest)
		}
	}
}

// acceptAll accepts every connection waiting on lfd into the loop.
func acceptAll(lfd, ep int, conns map[int32]*epollConn) {
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}) != nil {
			unix.Close(fd)
			continue
		}
		conns[int32(fd)] = &epollConn{in: make([]byte, readSize)}
	}
}

// writeAll writes b, waiting for the socket when it is full: replies to a
// pipeline of PINGs seldom fill it, and a benchmark's client reads them.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EAGAIN) {
			if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, -1); err != nil && !errors.Is(err, unix.EINTR) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// closeConn closes fd, which also takes it out of the epoll set.
func closeConn(fd int, conns map[int32]*epollConn) {
	delete(conns, int32(fd))
	unix.Close(fd)
}
