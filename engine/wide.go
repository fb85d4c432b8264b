package engine

import (
	"math"
	"math/bits"
)

// The algorithms multiply counts by durations (a limit of 10^15 times a window
// of 10^12 ms needs 100 bits), so products are formed in 128 bits and divided
// back down. Inputs are never negative. Results that cannot fit in an int64
// saturate at math.MaxInt64; the parameter bounds keep every reachable result
// far below that, so saturation is a guard, not a behaviour.

// mulDivFloor returns floor(a*b/c) for a, b >= 0 and c > 0.
func mulDivFloor(a, b, c int64) int64 {
	q, _ := mulDiv(a, b, 0, c)
	return q
}

// mulDivCeil returns ceil(a*b/c) for a, b >= 0 and c > 0.
func mulDivCeil(a, b, c int64) int64 {
	q, r := mulDiv(a, b, 0, c)
	if r != 0 && q < math.MaxInt64 {
		q++
	}
	return q
}

// mulAddDivCeil returns ceil((a*b + add)/c) for a, b, add >= 0 and c > 0.
func mulAddDivCeil(a, b, add, c int64) int64 {
	q, r := mulDiv(a, b, add, c)
	if r != 0 && q < math.MaxInt64 {
		q++
	}
	return q
}

// mulDiv returns the quotient and remainder of (a*b + add) / c, the quotient
// saturated at math.MaxInt64 (the remainder is then meaningless).
func mulDiv(a, b, add, c int64) (q int64, r int64) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	var carry uint64
	lo, carry = bits.Add64(lo, uint64(add), 0)
	hi += carry
	if hi >= uint64(c) {
		return math.MaxInt64, 0
	}
	uq, ur := bits.Div64(hi, lo, uint64(c))
	if uq > math.MaxInt64 {
		return math.MaxInt64, 0
	}
	return int64(uq), int64(ur)
}

// satAdd returns a+b for b >= 0, saturated at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
