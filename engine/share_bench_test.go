package engine

import (
	"strconv"
	"testing"
)

// BenchmarkShare is one renewal on a key of n holders: the cost that grows
// with them is splitting the budget (docs/algorithms.md, "RL.SHARE").
func BenchmarkShare(b *testing.B) {
	for _, n := range []int{1, 10, 100, MaxShareHolders} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := NewShard()
			now := int64(1_700_000_000_000)
			cmds := make([]Command, n)
			for j := range cmds {
				q := shareReq("envoy-"+strconv.Itoa(j), 1_000_000, 1000)
				q.Demand = int64(j) * 10
				cmds[j] = q.Command([]byte("api"))
			}
			out := make([]Result, 1)
			for j := range cmds {
				s.Apply(now, cmds[j:j+1], out)
			}
			b.ResetTimer()
			for i := range b.N {
				s.Apply(now+int64(i/n), cmds[i%n:i%n+1], out)
			}
		})
	}
}
