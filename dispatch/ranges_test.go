package dispatch

import (
	"math"
	"math/big"
	"testing"
)

// TestIntOverflowChecks compares addInt and mulInt with exact big-integer
// arithmetic at the edges of int64.
func TestIntOverflowChecks(t *testing.T) {
	vals := []int64{0, 1, -1, 2, -2, 3, 1 << 31, -1 << 31, 1 << 32, math.MaxInt64, math.MinInt64,
		math.MaxInt64 / 2, math.MinInt64 / 2, math.MaxInt64/2 + 1, math.MinInt64/2 - 1, 3037000499, 3037000500, -3037000500}
	fits := func(z *big.Int) bool { return z.IsInt64() }
	for _, a := range vals {
		for _, b := range vals {
			sum := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
			if s, ok := addInt(a, b); ok != fits(sum) || (ok && s != sum.Int64()) {
				t.Errorf("addInt(%d, %d) = %d, %v; exact %s", a, b, s, ok, sum)
			}
			prod := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
			if p, ok := mulInt(a, b); ok != fits(prod) || (ok && p != prod.Int64()) {
				t.Errorf("mulInt(%d, %d) = %d, %v; exact %s", a, b, p, ok, prod)
			}
		}
	}
}

// TestRangeRules checks the bounds of the range rules on hand-derived cases.
func TestRangeRules(t *testing.T) {
	scalar := func(v int64) Arg { return Arg{Kind: ArgScalarInt, Int: v, Double: float64(v)} }
	boolT := func(sizes ...int64) Arg {
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{Sizes: sizes, DType: Bool, Defined: true}}, Handles: []any{nil}}
	}
	u8 := func(sizes ...int64) Arg {
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{Sizes: sizes, DType: Uint8, Defined: true}}, Handles: []any{nil}}
	}
	cases := []struct {
		name   string
		fn     RangeFn
		args   []Arg
		lo, hi int64
		ok     bool
	}{
		{"bool + 5", addRange(false), []Arg{boolT(3), scalar(5), scalar(1)}, 5, 6, true},
		{"bool - 3*uint8", addRange(true), []Arg{boolT(3), u8(3), scalar(3)}, -765, 1, true},
		{"uint8 * -2", mulRange, []Arg{u8(2), scalar(-2)}, -510, 0, true},
		{"MaxInt64 + bool overflows", addRange(false), []Arg{scalar(math.MaxInt64), boolT(1), scalar(1)}, 0, 0, false},
		{"bool sum over 4x5", sumRange, []Arg{boolT(4, 5)}, 0, 20, true},
		{"bool sum over dim 1 of 4x5", sumRange, []Arg{boolT(4, 5), {Kind: ArgIntList, Ints: []int64{1}}}, 0, 5, true},
		{"bool sum over an empty list", sumRange, []Arg{boolT(4, 5), {Kind: ArgIntList, Ints: []int64{}}}, 0, 20, true},
		{"uint8 cumsum along dim 0 of 7x2", cumsumRange, []Arg{u8(7, 2), scalar(0)}, 0, 7 * 255, true},
		{"argmax of 3x8 along -1", argExtremeRange, []Arg{u8(3, 8), scalar(-1)}, 0, 7, true},
		{"argmax of 3x8 flattened", argExtremeRange, []Arg{u8(3, 8)}, 0, 23, true},
		{"fill 2.5", fillRange, []Arg{u8(2), {Kind: ArgScalarDouble, Double: 2.5}}, 0, 0, false},
		{"fill -4", fillRange, []Arg{u8(2), scalar(-4)}, -4, -4, true},
	}
	for _, tc := range cases {
		c := &Ctx{Op: tc.name, Args: tc.args}
		lo, hi, ok := tc.fn(c)
		if ok != tc.ok || (ok && (lo != tc.lo || hi != tc.hi)) {
			t.Errorf("%s: got [%d, %d] %v, want [%d, %d] %v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}
