package dispatch

import (
	"math"
	"math/big"
	"testing"

	"torchtpu/hlo"
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

// rangeCase is a range rule applied to arguments, with the bounds it must give.
type rangeCase struct {
	name   string
	fn     RangeFn
	args   []Arg
	lo, hi int64
	ok     bool
}

// scalarArg is a Python integer argument.
func scalarArg(v int64) Arg { return Arg{Kind: ArgScalarInt, Int: v, Double: float64(v)} }

// checkRanges runs each case on a Ctx reading ranges from r (none when nil).
func checkRanges(t *testing.T, cases []rangeCase, r Reader) {
	t.Helper()
	for _, tc := range cases {
		c := &Ctx{Op: tc.name, Args: tc.args, R: r}
		lo, hi, ok := tc.fn(c)
		if ok != tc.ok || (ok && (lo != tc.lo || hi != tc.hi)) {
			t.Errorf("%s: got [%d, %d] %v, want [%d, %d] %v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// TestRangeRules checks the bounds of the range rules on hand-derived cases.
func TestRangeRules(t *testing.T) {
	scalar := scalarArg
	boolT := func(sizes ...int64) Arg {
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{Sizes: sizes, DType: Bool, Defined: true}}, Handles: []any{nil}}
	}
	u8 := func(sizes ...int64) Arg {
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{Sizes: sizes, DType: Uint8, Defined: true}}, Handles: []any{nil}}
	}
	cases := []rangeCase{
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
		{"fill 2**53 + 1", fillRange, []Arg{u8(2), scalar(1<<53 + 1)}, 1<<53 + 1, 1<<53 + 1, true},
		{"fill 2.0**53", fillRange, []Arg{u8(2), {Kind: ArgScalarDouble, Double: 1 << 53}}, 0, 0, false},
		{"fill -7.0", fillRange, []Arg{u8(2), {Kind: ArgScalarDouble, Double: -7}}, -7, -7, true},
		{"bool + (2**53 + 1) * bool", addRange(false), []Arg{boolT(3), boolT(3), scalar(1<<53 + 1)}, 0, 1<<53 + 2, true},
		{"bool + 2.0**53 * bool", addRange(false), []Arg{boolT(3), boolT(3), {Kind: ArgScalarDouble, Double: 1 << 53}}, 0, 0, false},
	}
	checkRanges(t, cases, nil)
}

// knownRanges is a Reader that knows the value ranges of the tensors whose
// handles it maps (the engine's uploads and earlier results).
type knownRanges struct {
	Reader
	r map[any][2]int64
}

func (k knownRanges) IntRange(h any) (lo, hi int64, ok bool) {
	r, ok := k.r[h]
	return r[0], r[1], ok
}

// TestTruthRangeRules checks the bounds of comparisons, isin, all/any, the
// logical ops and the selections on hand-derived cases: [v, v] only where
// every element's result is decided by its arguments' bounds.
func TestTruthRangeRules(t *testing.T) {
	scalar := scalarArg
	flag := func(v int64) Arg { return Arg{Kind: ArgBool, Int: v} }
	ranges := map[any][2]int64{}
	n := 0
	tensor := func(d DType, r []int64, sizes ...int64) Arg {
		n++
		if r != nil {
			ranges[n] = [2]int64{r[0], r[1]}
		}
		return Arg{Kind: ArgTensor, Tensors: []TensorMeta{{Sizes: sizes, DType: d, Defined: true}}, Handles: []any{n}}
	}
	ids := func(lo, hi int64) Arg { return tensor(Int64, []int64{lo, hi}, 4) }
	mask := func(lo, hi int64) Arg { return tensor(Bool, []int64{lo, hi}, 4) }
	cases := []rangeCase{
		{"[5,5] == 5", compareRange(hlo.EQ), []Arg{ids(5, 5), scalar(5)}, 1, 1, true},
		{"[5,5] == 6", compareRange(hlo.EQ), []Arg{ids(5, 5), scalar(6)}, 0, 0, true},
		{"[0,10] == 5", compareRange(hlo.EQ), []Arg{ids(0, 10), scalar(5)}, 0, 1, true},
		{"[0,10] != 11", compareRange(hlo.NE), []Arg{ids(0, 10), scalar(11)}, 1, 1, true},
		{"[0,924] < 0", compareRange(hlo.LT), []Arg{ids(0, 924), scalar(0)}, 0, 0, true},
		{"[-3,-1] < 0", compareRange(hlo.LT), []Arg{ids(-3, -1), scalar(0)}, 1, 1, true},
		{"[-3,0] < 0", compareRange(hlo.LT), []Arg{ids(-3, 0), scalar(0)}, 0, 1, true},
		{"[0,5] <= 5", compareRange(hlo.LE), []Arg{ids(0, 5), scalar(5)}, 1, 1, true},
		{"[0,5] > 5", compareRange(hlo.GT), []Arg{ids(0, 5), scalar(5)}, 0, 0, true},
		{"[0,5] >= 0", compareRange(hlo.GE), []Arg{ids(0, 5), scalar(0)}, 1, 1, true},
		{"[0,5] >= 1", compareRange(hlo.GE), []Arg{ids(0, 5), scalar(1)}, 0, 1, true},
		{"[2,4] < [5,9]", compareRange(hlo.LT), []Arg{ids(2, 4), ids(5, 9)}, 1, 1, true},
		{"[2,5] > [5,9]", compareRange(hlo.GT), []Arg{ids(2, 5), ids(5, 9)}, 0, 0, true},
		{"mask [1,1] == 1", compareRange(hlo.EQ), []Arg{mask(1, 1), scalar(1)}, 1, 1, true},
		{"unknown mask == 1", compareRange(hlo.EQ), []Arg{tensor(Bool, nil, 4), scalar(1)}, 0, 1, true},
		{"float < 0", compareRange(hlo.LT), []Arg{tensor(Float32, nil, 4), scalar(0)}, 0, 0, false},
		{"unknown int64 < 0", compareRange(hlo.LT), []Arg{tensor(Int64, nil, 4), scalar(0)}, 0, 0, false},
		{"int32 == 2**40 (converted)", compareRange(hlo.EQ), []Arg{tensor(Int32, []int64{0, 9}, 4), scalar(1 << 40)}, 0, 0, false},
		{"uint8 < -1 (converted)", compareRange(hlo.LT), []Arg{tensor(Uint8, nil, 4), scalar(-1)}, 0, 0, false},
		{"isin [7,7] in [7,7]", isinRange, []Arg{ids(7, 7), ids(7, 7)}, 1, 1, true},
		{"isin [7,7] in [7,7], invert", isinRange, []Arg{ids(7, 7), ids(7, 7), flag(0), flag(1)}, 0, 0, true},
		{"isin [0,5] in [6,9]", isinRange, []Arg{ids(0, 5), ids(6, 9)}, 0, 0, true},
		{"isin [0,5] in [5,9]", isinRange, []Arg{ids(0, 5), ids(5, 9)}, 0, 1, true},
		{"isin in nothing, invert", isinRange, []Arg{ids(0, 5), tensor(Int64, nil, 0), flag(0), flag(1)}, 1, 1, true},
		{"any of [0,0]", allAnyRange(false), []Arg{ids(0, 0)}, 0, 0, true},
		{"any of [1,3]", allAnyRange(false), []Arg{ids(1, 3)}, 1, 1, true},
		{"all of [-2,3]", allAnyRange(true), []Arg{ids(-2, 3)}, 0, 1, true},
		{"all of [-2,-1]", allAnyRange(true), []Arg{ids(-2, -1)}, 1, 1, true},
		{"all of nothing", allAnyRange(true), []Arg{tensor(Int64, nil, 3, 0)}, 1, 1, true},
		{"any of nothing", allAnyRange(false), []Arg{tensor(Float32, nil, 0)}, 0, 0, true},
		{"any of floats", allAnyRange(false), []Arg{tensor(Float32, nil, 2)}, 0, 0, false},
		{"logical_not [0,0]", logicalNotRange, []Arg{ids(0, 0)}, 1, 1, true},
		{"logical_not [2,5]", logicalNotRange, []Arg{ids(2, 5)}, 0, 0, true},
		{"bitwise_not mask [1,1]", bitwiseNotRange, []Arg{mask(1, 1)}, 0, 0, true},
		{"bitwise_not [2,5]", bitwiseNotRange, []Arg{ids(2, 5)}, -6, -3, true},
		{"bitwise_not uint8", bitwiseNotRange, []Arg{tensor(Uint8, nil, 4)}, 0, 0, false},
		{"[1,1] and [0,1]", logicalRange(true), []Arg{mask(1, 1), mask(0, 1)}, 0, 1, true},
		{"[1,1] or [0,1]", logicalRange(false), []Arg{mask(1, 1), tensor(Bool, nil, 4)}, 1, 1, true},
		{"[0,0] and [-4,9]", logicalRange(true), []Arg{mask(0, 0), ids(-4, 9)}, 0, 0, true},
		{"masked_fill([-1,15], no mask, 0)", selectRange(1, 2, 0), []Arg{ids(-1, 15), mask(0, 0), scalar(0)}, -1, 15, true},
		{"masked_fill([-1,15], all, 0)", selectRange(1, 2, 0), []Arg{ids(-1, 15), mask(1, 1), scalar(0)}, 0, 0, true},
		{"masked_fill([-1,15], some, 0)", selectRange(1, 2, 0), []Arg{ids(-1, 15), mask(0, 1), scalar(0)}, -1, 15, true},
		{"masked_fill(float, some, 0)", selectRange(1, 2, 0), []Arg{tensor(Float32, nil, 4), mask(0, 1), scalar(0)}, 0, 0, false},
		{"where([0,1], [3,4], 9)", selectRange(0, 1, 2), []Arg{mask(0, 1), ids(3, 4), scalar(9)}, 3, 9, true},
		{"where([1,1], [3,4], float)", selectRange(0, 1, 2), []Arg{mask(1, 1), ids(3, 4), tensor(Float32, nil, 4)}, 3, 4, true},
		{"[5,9] & [0,1]", bitwiseRange("and"), []Arg{ids(5, 9), mask(0, 1)}, 0, 1, true},
		{"[6,6] & [3,3]", bitwiseRange("and"), []Arg{ids(6, 6), ids(3, 3)}, 2, 2, true},
		{"[4,9] | [0,1]", bitwiseRange("or"), []Arg{ids(4, 9), mask(0, 1)}, 4, 15, true},
		{"mask [1,1] | [0,1]", bitwiseRange("or"), []Arg{mask(1, 1), mask(0, 1)}, 1, 1, true},
		{"[0,8] ^ [0,1]", bitwiseRange("xor"), []Arg{ids(0, 8), mask(0, 1)}, 0, 15, true},
		{"[-1,8] & [0,1]", bitwiseRange("and"), []Arg{ids(-1, 8), mask(0, 1)}, 0, 0, false},
		{"rsub([0,1], 1)", swapped(addRange(true)), []Arg{ids(0, 1), scalar(1), scalar(1)}, 0, 1, true},
		{"rsub([2,5], 10, alpha 2)", swapped(addRange(true)), []Arg{ids(2, 5), scalar(10), scalar(2)}, 0, 6, true},
		{"cat([0,15], [16,16], empty)", catRange, []Arg{{Kind: ArgTensorList, Tensors: []TensorMeta{
			{Sizes: []int64{1, 16}, DType: Int64, Defined: true}, {Sizes: []int64{1, 1}, DType: Int64, Defined: true},
			{Sizes: []int64{0}, DType: Float32, Defined: true}}, Handles: []any{ids(0, 15).Handles[0], ids(16, 16).Handles[0], nil}}}, 0, 16, true},
		{"cat([0,15], unknown)", catRange, []Arg{{Kind: ArgTensorList, Tensors: []TensorMeta{
			{Sizes: []int64{1, 16}, DType: Int64, Defined: true}, {Sizes: []int64{1, 1}, DType: Int64, Defined: true}},
			Handles: []any{ids(0, 15).Handles[0], "unknown"}}}, 0, 0, false},
		{"cat(bool, uint8)", catRange, []Arg{{Kind: ArgTensorList, Tensors: []TensorMeta{
			{Sizes: []int64{2}, DType: Bool, Defined: true}, {Sizes: []int64{2}, DType: Uint8, Defined: true}},
			Handles: []any{"b", "u"}}}, 0, 255, true},
	}
	checkRanges(t, cases, knownRanges{r: ranges})
}
