package dispatch

import (
	"math/bits"

	"torchtpu/hlo"
)

// Ranges of comparisons and truth values. A comparison, isin, any/all or a
// logical op gives each element 0 or 1; when its arguments' bounds decide it
// (a known upload compared with a number, a mask of ones tested for ones), the
// bound is a single value and the engine knows the result without running it:
// a host read of such a bool (`if (ids < 0).any():`) needs no device sync.

// exactArgs returns the bounds of arguments i and j when both are known and
// the op compares them in a dtype (bool, int32 or int64) that holds both
// exactly, so the bounds are the values compared.
func (c *Ctx) exactArgs(i, j int) (a, b [2]int64, ok bool) {
	d := c.resultType(i, j)
	lim := [2]int64{0, 1}
	switch d {
	case Bool:
	case Int32:
		lim = [2]int64{-1 << 31, 1<<31 - 1}
	case Int64:
		lim = [2]int64{-1 << 63, 1<<63 - 1}
	default:
		return a, b, false
	}
	alo, ahi, ok1 := c.argRange(i)
	blo, bhi, ok2 := c.argRange(j)
	in := func(lo, hi int64) bool { return lo >= lim[0] && hi <= lim[1] }
	if !ok1 || !ok2 || !in(alo, ahi) || !in(blo, bhi) {
		return a, b, false
	}
	return [2]int64{alo, ahi}, [2]int64{blo, bhi}, true
}

// truthRange is the range of 0/1 truth values of elements bounded by [lo, hi].
func truthRange(lo, hi int64) (int64, int64) {
	switch {
	case lo > 0 || hi < 0:
		return 1, 1
	case lo == 0 && hi == 0:
		return 0, 0
	}
	return 0, 1
}

// decided is the range of a truth value: [1, 1] when yes, [0, 0] when no,
// [0, 1] when neither is known.
func decided(yes, no bool) (int64, int64, bool) {
	switch {
	case yes:
		return 1, 1, true
	case no:
		return 0, 0, true
	}
	return 0, 1, true
}

// compareRange bounds eq, ne, lt, le, gt and ge (hlo direction dir).
func compareRange(dir string) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		a, b, ok := c.exactArgs(0, 1)
		if !ok {
			return 0, 0, false
		}
		eq := a[0] == a[1] && b[0] == b[1] && a[0] == b[0]
		apart := a[1] < b[0] || b[1] < a[0]
		switch dir {
		case hlo.EQ:
			return decided(eq, apart)
		case hlo.NE:
			return decided(apart, eq)
		case hlo.LT:
			return decided(a[1] < b[0], a[0] >= b[1])
		case hlo.LE:
			return decided(a[1] <= b[0], a[0] > b[1])
		case hlo.GT:
			return decided(a[0] > b[1], a[1] <= b[0])
		case hlo.GE:
			return decided(a[0] >= b[1], a[1] < b[0])
		}
		return 0, 0, false
	}
}

// isinRange bounds isin(elements, test_elements, assume_unique, invert).
func isinRange(c *Ctx) (int64, int64, bool) {
	invert := c.Bool(3, false)
	flip := func(lo, hi int64, ok bool) (int64, int64, bool) {
		if invert {
			return 1 - hi, 1 - lo, ok
		}
		return lo, hi, ok
	}
	if c.IsTensor(1) && c.Meta(1).Numel() == 0 {
		return flip(0, 0, true) // nothing to find
	}
	a, b, ok := c.exactArgs(0, 1)
	if !ok {
		return 0, 0, false
	}
	return flip(decided(a[0] == a[1] && b[0] == b[1] && a[0] == b[0], a[1] < b[0] || b[1] < a[0]))
}

// allAnyRange bounds all and any: the input's truth range, or the value of an
// empty reduction when the input has no elements.
func allAnyRange(isAll bool) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		if c.Meta(0).Numel() == 0 {
			if isAll {
				return 1, 1, true
			}
			return 0, 0, true
		}
		lo, hi, ok := c.argRange(0)
		if !ok {
			return 0, 0, false
		}
		lo, hi = truthRange(lo, hi)
		return lo, hi, true
	}
}

// logicalNotRange bounds logical_not: the input's truth range, negated.
func logicalNotRange(c *Ctx) (int64, int64, bool) {
	lo, hi, ok := c.argRange(0)
	if !ok {
		return 0, 0, false
	}
	lo, hi = truthRange(lo, hi)
	return 1 - hi, 1 - lo, true
}

// bitwiseNotRange bounds bitwise_not of bool (negation) and signed integers
// (~x is -x-1).
func bitwiseNotRange(c *Ctx) (int64, int64, bool) {
	lo, hi, ok := c.argRange(0)
	switch d := c.Meta(0).DType; {
	case !ok:
		return 0, 0, false
	case d == Bool:
		return 1 - hi, 1 - lo, true
	case d == Int8 || d == Int16 || d == Int32 || d == Int64:
		return -hi - 1, -lo - 1, true
	}
	return 0, 0, false
}

// logicalRange bounds logical_and (and) and logical_or from both arguments'
// truth ranges.
func logicalRange(and bool) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		alo, ahi, ok1 := c.argRange(0)
		blo, bhi, ok2 := c.argRange(1)
		if !ok1 || !ok2 {
			return 0, 0, false
		}
		alo, ahi = truthRange(alo, ahi)
		blo, bhi = truthRange(blo, bhi)
		if and {
			return min(alo, blo), min(ahi, bhi), true
		}
		return max(alo, blo), max(ahi, bhi), true
	}
}

// selectRange bounds an op that takes each element from argument a where the
// condition (argument cond) holds and from argument b elsewhere: masked_fill
// (cond the mask, a the value, b self) and where.
func selectRange(cond, a, b int) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		clo, chi, ok := c.argRange(cond)
		if !ok {
			return 0, 0, false
		}
		clo, chi = truthRange(clo, chi)
		alo, ahi, oka := c.argRange(a)
		blo, bhi, okb := c.argRange(b)
		switch {
		case clo == 1:
			return alo, ahi, oka
		case chi == 0:
			return blo, bhi, okb
		}
		return min(alo, blo), max(ahi, bhi), oka && okb
	}
}

// bitwiseRange bounds bitwise_and, bitwise_or and bitwise_xor (op "and", "or",
// "xor") of non-negative values: exact for two known values, else within the
// bits of the larger bound (and no larger than the smaller bound, for and).
func bitwiseRange(op string) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		alo, ahi, ok1 := c.argRange(0)
		blo, bhi, ok2 := c.argRange(1)
		if !ok1 || !ok2 || alo < 0 || blo < 0 {
			return 0, 0, false
		}
		if alo == ahi && blo == bhi {
			v := map[string]int64{"and": alo & blo, "or": alo | blo, "xor": alo ^ blo}[op]
			return v, v, true
		}
		ones := int64(1)<<bits.Len64(uint64(max(ahi, bhi))) - 1
		switch op {
		case "and":
			return 0, min(ahi, bhi), true
		case "or":
			return max(alo, blo), ones, true
		}
		return 0, ones, true
	}
}
