package dispatch

import (
	"math"
	"math/bits"

	"torchtpu/hlo"
)

// Value ranges. An index check (checkIndices) needs no device read when the
// engine knows bounds on the indices: values uploaded from the host, and what
// integer ops derive from them. A rule's Range says how its result is bounded
// by its arguments' bounds; Lower records the bound (Ctx.KnowRange) when it
// fits the result's dtype. Every bound follows from what an op signature
// holds (shapes, dtypes, Python numbers, the arguments' known ranges), so a
// replayed plan gives its results the bounds the first call did.

// RangeFn returns bounds on every value of a rule's result 0, or ok=false.
type RangeFn func(c *Ctx) (lo, hi int64, ok bool)

// Lower runs rule r on c and, where r has a Range that knows a bound on
// result 0 within its dtype (int32, int64 or bool), records it.
func (r *Rule) Lower(c *Ctx) ([]*hlo.Value, error) {
	results, err := r.Fn(c)
	if err != nil || r.Range == nil || len(results) == 0 {
		return results, err
	}
	var min, max int64
	switch results[0].T.Elem {
	case hlo.S64:
		min, max = math.MinInt64, math.MaxInt64
	case hlo.S32:
		min, max = math.MinInt32, math.MaxInt32
	case hlo.Pred:
		min, max = 0, 1
	default:
		return results, nil
	}
	if lo, hi, ok := r.Range(c); ok && lo >= min && hi <= max && lo <= hi {
		c.KnowRange(0, lo, hi)
	}
	return results, nil
}

// argRange returns bounds on every value of argument i known without a device
// read: a Python integer or bool, a tensor of a narrow integer dtype (by its
// dtype), or a bool, int32 or int64 tensor whose bounds the engine knows (a
// bool tensor is within [0, 1] regardless).
func (c *Ctx) argRange(i int) (lo, hi int64, ok bool) {
	if !c.Has(i) {
		return 0, 0, false
	}
	a := c.Args[i]
	switch a.Kind {
	case ArgInt, ArgScalarInt, ArgBool, ArgScalarBool:
		return a.Int, a.Int, true
	case ArgTensor:
	default:
		return 0, 0, false
	}
	return c.tensorRange(c.Meta(i), a.Handles[0])
}

// tensorRange returns bounds on every value of the tensor with metadata m and
// handle h: by its dtype for narrow integers, as the engine knows them for
// bool, int32 and int64 (any bool is within [0, 1]).
func (c *Ctx) tensorRange(m TensorMeta, h any) (lo, hi int64, ok bool) {
	rr, isRR := c.R.(rangeReader)
	switch d := m.DType; d {
	case Bool:
		if isRR {
			if lo, hi, ok := rr.IntRange(h); ok {
				return lo, hi, true
			}
		}
		return 0, 1, true
	case UInt16:
		return 0, math.MaxUint16, true
	case Uint8, Int8, Int16:
		lo, hi, _ := scalarLimits(d) // the dtype's own bounds
		return int64(lo), int64(hi), true
	case Int32, Int64:
		if !isRR {
			return 0, 0, false
		}
		return rr.IntRange(h)
	}
	return 0, 0, false
}

// catRange bounds cat: the union of its inputs' bounds (inputs without
// elements add none).
func catRange(c *Ctx) (int64, int64, bool) {
	a := c.Args[0]
	lo, hi, some := int64(math.MaxInt64), int64(math.MinInt64), false
	for k, m := range a.Tensors {
		if m.Numel() == 0 {
			continue
		}
		l, h, ok := c.tensorRange(m, a.Handles[k])
		if !ok {
			return 0, 0, false
		}
		lo, hi, some = min(lo, l), max(hi, h), true
	}
	return lo, hi, some
}

// addRange bounds add and sub: self + alpha*other (self - alpha*other).
func addRange(sub bool) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		alo, ahi, ok1 := c.argRange(0)
		blo, bhi, ok2 := c.argRange(1)
		alpha, ok3 := c.exactInt(2, 1)
		if !ok1 || !ok2 || !ok3 {
			return 0, 0, false
		}
		blo, bhi, ok := scaleRange(blo, bhi, alpha)
		if !ok {
			return 0, 0, false
		}
		if sub {
			if blo == math.MinInt64 {
				return 0, 0, false
			}
			blo, bhi = -bhi, -blo
		}
		lo, ok1 := addInt(alo, blo)
		hi, ok2 := addInt(ahi, bhi)
		return lo, hi, ok1 && ok2
	}
}

// swapped bounds an op by f applied to its first two arguments in the other
// order (rsub(self, other) is sub(other, self)).
func swapped(f RangeFn) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		if !c.Has(0) || !c.Has(1) {
			return 0, 0, false
		}
		sw := *c
		sw.Args = append([]Arg{c.Args[1], c.Args[0]}, c.Args[2:]...)
		return f(&sw)
	}
}

// mulRange bounds mul: the extremes of the bounds' products.
func mulRange(c *Ctx) (int64, int64, bool) {
	alo, ahi, ok1 := c.argRange(0)
	blo, bhi, ok2 := c.argRange(1)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, a := range []int64{alo, ahi} {
		for _, b := range []int64{blo, bhi} {
			p, ok := mulInt(a, b)
			if !ok {
				return 0, 0, false
			}
			lo, hi = min(lo, p), max(hi, p)
		}
	}
	return lo, hi, true
}

// sameRange bounds ops whose values are argument i's (clone, copy_ from src).
func sameRange(i int) RangeFn {
	return func(c *Ctx) (int64, int64, bool) { return c.argRange(i) }
}

// fillRange bounds fill: the one value, when it is an integer.
func fillRange(c *Ctx) (int64, int64, bool) {
	if c.IsTensor(1) {
		return c.argRange(1)
	}
	v, ok := c.exactInt(1, 0)
	return v, v, ok
}

// exactInt returns number argument i (def when absent) as an exact integer:
// an integer or bool as given, a float only when it is a whole number below
// 2**53 in magnitude (where every integer is a float64).
func (c *Ctx) exactInt(i int, def int64) (int64, bool) {
	if !c.Has(i) {
		return def, true
	}
	switch a := c.Args[i]; a.Kind {
	case ArgInt, ArgScalarInt, ArgBool, ArgScalarBool:
		return a.Int, true
	case ArgDouble, ArgScalarDouble:
		if v := a.Double; v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), true
		}
	}
	return 0, false
}

// sumRange bounds sum: n values of [lo, hi] sum to within [n*lo, n*hi] (and
// 0 for none), n the count reduced into each result: the sizes of the listed
// dims (all of them for none or an empty list).
func sumRange(c *Ctx) (int64, int64, bool) {
	lo, hi, ok := c.argRange(0)
	m := c.Meta(0)
	if !ok || m.Numel() == 0 {
		return 0, 0, ok
	}
	n := m.Numel()
	if c.Has(1) && c.Args[1].Kind == ArgIntList && len(c.Ints(1, nil)) > 0 {
		n = 1
		for _, d := range c.Ints(1, nil) {
			w, err := wrapDim(d, m.Rank())
			if err != nil || int(w) >= m.Rank() {
				return 0, 0, false
			}
			n *= m.Sizes[w]
		}
	}
	return countedRange(lo, hi, n)
}

// cumsumRange bounds cumsum along dim: each prefix sums at most the dim's
// size of values.
func cumsumRange(c *Ctx) (int64, int64, bool) {
	lo, hi, ok := c.argRange(0)
	m := c.Meta(0)
	if !ok || m.Numel() == 0 {
		return 0, 0, ok
	}
	n := int64(1)
	if m.Rank() > 0 {
		d, err := wrapDim(c.Int(1, 0), m.Rank())
		if err != nil {
			return 0, 0, false
		}
		n = m.Sizes[d]
	}
	return countedRange(lo, hi, n)
}

// countedRange bounds a sum of between 1 and n values of [lo, hi].
func countedRange(lo, hi, n int64) (int64, int64, bool) {
	nlo, ok1 := mulInt(lo, n)
	nhi, ok2 := mulInt(hi, n)
	return min(lo, nlo), max(hi, nhi), ok1 && ok2
}

// argExtremeRange bounds argmax and argmin: an index into the reduced dim
// (or the flattened tensor without one).
func argExtremeRange(c *Ctx) (int64, int64, bool) {
	m := c.Meta(0)
	n := m.Numel()
	if c.Has(1) && m.Rank() > 0 {
		d, err := wrapDim(c.Int(1, 0), m.Rank())
		if err != nil {
			return 0, 0, false
		}
		n = m.Sizes[d]
	}
	return 0, max(n-1, 0), true
}

// scaleRange bounds k*[lo, hi].
func scaleRange(lo, hi, k int64) (int64, int64, bool) {
	a, ok1 := mulInt(lo, k)
	b, ok2 := mulInt(hi, k)
	return min(a, b), max(a, b), ok1 && ok2
}

// addInt returns a+b and whether it did not overflow.
func addInt(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

// mulInt returns a*b and whether it did not overflow.
func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	neg := (a < 0) != (b < 0)
	ua, ub := absU(a), absU(b)
	h, l := bits.Mul64(ua, ub)
	if h != 0 || (!neg && l > math.MaxInt64) || (neg && l > 1<<63) {
		return 0, false
	}
	if neg {
		return int64(-l), true
	}
	return int64(l), true
}

func absU(a int64) uint64 {
	if a < 0 {
		return uint64(-a) // also right for MinInt64: -a wraps to itself, 1<<63 as uint64
	}
	return uint64(a)
}

// clampRange bounds clamp, min(max(x, min), max), with min argument lo and
// max argument hi (-1 where the op has none): the input's range moved by the
// bounds' ranges, an unknown one taken as unbounded.
func clampRange(lo, hi int) RangeFn {
	return func(c *Ctx) (int64, int64, bool) {
		l, h, ok := c.argRange(0)
		if !ok {
			l, h = math.MinInt64, math.MaxInt64
		}
		bound := func(i int) (int64, int64) {
			if c.IsTensor(i) {
				if bl, bh, ok := c.argRange(i); ok {
					return bl, bh
				}
			} else if v, ok := c.exactInt(i, 0); ok {
				return v, v
			}
			return math.MinInt64, math.MaxInt64
		}
		if lo >= 0 && c.Has(lo) {
			bl, bh := bound(lo)
			l, h = max(l, bl), max(h, bh)
		}
		if hi >= 0 && c.Has(hi) {
			bl, bh := bound(hi)
			l, h = min(l, bl), min(h, bh)
		}
		return l, h, l != math.MinInt64 && h != math.MaxInt64
	}
}

// zeroRange bounds zero: every value is 0.
func zeroRange(*Ctx) (int64, int64, bool) { return 0, 0, true }
