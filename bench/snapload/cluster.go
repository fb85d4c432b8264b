package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/rlserver/rlserver/cluster"
)

// keyPools returns, for each node of addrs, the key numbers below keys
// whose slots it serves, as the first node's CLUSTER SLOTS says: each
// request then goes to its shard's leader, as a cluster client sends it.
// With one node, every key is its.
func keyPools(addrs []string, keys int) ([][]int32, error) {
	pools := make([][]int32, len(addrs))
	if len(addrs) == 1 {
		pools[0] = make([]int32, keys)
		for n := range pools[0] {
			pools[0][n] = int32(n)
		}
		return pools, nil
	}
	owner, err := slotOwners(addrs)
	if err != nil {
		return nil, err
	}
	var key []byte
	for n := range keys {
		key = fmt.Appendf(key[:0], "user:%012d", n)
		o := owner[cluster.Slot(key)]
		pools[o] = append(pools[o], int32(n))
	}
	for i, p := range pools {
		if len(p) == 0 {
			return nil, fmt.Errorf("%s serves none of the keys", addrs[i])
		}
	}
	return pools, nil
}

// slotOwners maps each slot to the index in addrs of the node CLUSTER
// SLOTS names for it.
func slotOwners(addrs []string) ([cluster.SlotCount]int, error) {
	var owner [cluster.SlotCount]int
	index := make(map[string]int)
	for i, a := range addrs {
		index[a] = i
	}
	nc, err := net.Dial("tcp", addrs[0])
	if err != nil {
		return owner, err
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n")); err != nil {
		return owner, err
	}
	v, err := readValue(bufio.NewReader(nc))
	if err != nil {
		return owner, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	ranges, _ := v.([]any)
	covered := 0
	for _, r := range ranges {
		f, _ := r.([]any)
		if len(f) < 3 {
			return owner, errors.New("CLUSTER SLOTS: a range without a node")
		}
		node, _ := f[2].([]any)
		first, _ := f[0].(int64)
		last, _ := f[1].(int64)
		if len(node) < 2 || first < 0 || last >= cluster.SlotCount || first > last {
			return owner, errors.New("CLUSTER SLOTS: a malformed range")
		}
		host, _ := node[0].(string)
		port, _ := node[1].(int64)
		i, ok := index[net.JoinHostPort(host, strconv.FormatInt(port, 10))]
		if !ok {
			return owner, fmt.Errorf("CLUSTER SLOTS names %s:%d, not among -addrs", host, port)
		}
		for s := first; s <= last; s++ {
			owner[s] = i
		}
		covered += int(last - first + 1)
	}
	if covered != cluster.SlotCount {
		return owner, fmt.Errorf("CLUSTER SLOTS covers %d slots", covered)
	}
	return owner, nil
}

// replyError is an error reply's text.
type replyError string

func (e replyError) Error() string { return string(e) }

// readValue reads one reply: a string, an integer, nil, an array of
// values, or a replyError.
func readValue(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("malformed reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '-':
		return nil, replyError(body)
	case '+':
		return body, nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		size, err := strconv.Atoi(body)
		if err != nil || size < 0 {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		return string(b[:size]), nil
	case '*':
		count, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		vs := make([]any, 0, max(count, 0))
		for range count {
			v, err := readValue(r)
			if err != nil {
				return nil, err
			}
			vs = append(vs, v)
		}
		return vs, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}
