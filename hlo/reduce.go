package hlo

import "sync"

// Reducer names the combining function of a reduction.
type Reducer string

// The reducers Reduce offers.
const (
	ReduceSum Reducer = "add"
	ReduceMul Reducer = "multiply"
	ReduceMax Reducer = "maximum"
	ReduceMin Reducer = "minimum"
	ReduceAnd Reducer = "and"
	ReduceOr  Reducer = "or"
	ReduceXor Reducer = "xor"
)

func reducedShape(t Type, dims []int64) []int64 {
	drop := map[int64]bool{}
	for _, d := range dims {
		if !(d >= 0 && int(d) < t.Rank() && !drop[d]) {
			failf("reduce: bad dimension %d for %v", d, t)
		}
		drop[d] = true
	}
	var out []int64
	for i, s := range t.Shape {
		if !drop[int64(i)] {
			out = append(out, s)
		}
	}
	return out
}

// WideF32Sums says whether a float32 sum over several dimensions of at least
// wideSumMin elements accumulates in float64. The engine sets it once, for
// the XLA CPU plugin: its reduction emitter accumulates such sums in order
// along the outer dimensions, so their error grows with the element count
// (a sum of 1..8192 held as 8×8×8×16 was off by 1200), where CPU's cascade
// sum stays within a few ulps. TPU compilers reduce in trees and keep it off.
var WideF32Sums bool

const wideSumMin = 1024

// Reduce combines x over dims with r, starting from the scalar init.
func (b *Builder) Reduce(x, init *Value, r Reducer, dims ...int64) *Value {
	if len(dims) == 0 {
		return x
	}
	if WideF32Sums && r == ReduceSum && x.T.Elem == F32 && len(dims) > 1 {
		n := int64(1)
		for _, d := range dims {
			n *= x.T.Shape[d]
		}
		if n >= wideSumMin {
			return b.Convert(b.Reduce(b.Convert(x, F64), b.Convert(init, F64), r, dims...), F32)
		}
	}
	body := b.reducerRegion(r, x.T.Elem)
	out := T(x.T.Elem, reducedShape(x.T, dims)...)
	return b.opN("stablehlo.reduce", []Type{out}, "{dimensions = "+i64Array(dims)+"}", body, x, init)[0]
}

// ReduceArg reduces (x, idx) pairs over dim, keeping for each output the
// element that wins under cmp (GT for argmax, LT for argmin) and, among
// equal values, the smallest index; NaN wins over everything. It returns the
// winning values and indices.
func (b *Builder) ReduceArg(x, idx *Value, dim int64, cmp string) (*Value, *Value) {
	st, it := T(x.T.Elem), T(idx.T.Elem)
	var initV *Value
	if cmp == GT {
		initV = b.Constant(st, lowest(x.T.Elem))
	} else {
		initV = b.Constant(st, highest(x.T.Elem))
	}
	initI := b.ConstantInt(it, 0)
	body := b.region([]Type{st, it, st, it}, func(rb *Builder, a []*Value) []*Value {
		av, ai, bv, bi := a[0], a[1], a[2], a[3]
		better := rb.Compare(cmp, av, bv)
		eq := rb.Compare(EQ, av, bv)
		if x.T.Elem.IsFloat() {
			aNaN := rb.Compare(NE, av, av)
			bNaN := rb.Compare(NE, bv, bv)
			better = rb.Or(better, rb.And(aNaN, rb.Not(bNaN)))
			eq = rb.Or(eq, rb.And(aNaN, bNaN))
		}
		lowerIdx := rb.Compare(LT, ai, bi)
		takeA := rb.Or(better, rb.And(eq, lowerIdx))
		return []*Value{rb.Select(takeA, av, bv), rb.Select(takeA, ai, bi)}
	})
	shape := reducedShape(x.T, []int64{dim})
	outs := b.opN("stablehlo.reduce", []Type{T(x.T.Elem, shape...), T(idx.T.Elem, shape...)},
		"{dimensions = "+i64Array([]int64{dim})+"}", body, x, idx, initV, initI)
	return outs[0], outs[1]
}

func lowest(e Elem) float64 {
	switch e {
	case Pred, U8, U16, U32, U64:
		return 0
	case S8:
		return -128
	case S16:
		return -32768
	case S32:
		return -2147483648
	case S64:
		return -9223372036854775808
	}
	return negInf
}

func highest(e Elem) float64 {
	switch e {
	case Pred:
		return 1
	case U8:
		return 255
	case U16:
		return 65535
	case U32:
		return 4294967295
	case U64:
		return 18446744073709551615
	case S8:
		return 127
	case S16:
		return 32767
	case S32:
		return 2147483647
	case S64:
		return 9223372036854775807
	}
	return posInf
}

// Lowest returns the smallest value of e (-Inf for floats).
func Lowest(e Elem) float64 { return lowest(e) }

// Highest returns the largest value of e (+Inf for floats).
func Highest(e Elem) float64 { return highest(e) }

// DotGeneral contracts x and y: batch dims pair up first, then x's free
// dims, then y's free dims form the result.
func (b *Builder) DotGeneral(x, y *Value, batchX, batchY, contractX, contractY []int64) *Value {
	return b.DotGeneralTo(x.T.Elem, x, y, batchX, batchY, contractX, contractY)
}

// DotGeneralTo is DotGeneral with a result of element type out: products
// accumulate in out, so half-precision operands can sum in float32 and be
// rounded once by the caller.
func (b *Builder) DotGeneralTo(out Elem, x, y *Value, batchX, batchY, contractX, contractY []int64) *Value {
	if x.T.Elem != y.T.Elem {
		failf("dot_general: element types differ: %v vs %v", x.T, y.T)
	}
	used := func(n int, a, c []int64) []int64 {
		skip := map[int64]bool{}
		for _, d := range a {
			skip[d] = true
		}
		for _, d := range c {
			skip[d] = true
		}
		var free []int64
		for i := 0; i < n; i++ {
			if !skip[int64(i)] {
				free = append(free, int64(i))
			}
		}
		return free
	}
	var dims []int64
	for i, d := range batchX {
		if x.T.Shape[d] != y.T.Shape[batchY[i]] {
			failf("dot_general: batch dims differ: %v vs %v", x.T, y.T)
		}
		dims = append(dims, x.T.Shape[d])
	}
	for i, d := range contractX {
		if x.T.Shape[d] != y.T.Shape[contractY[i]] {
			failf("dot_general: contracting dims differ: %v vs %v", x.T, y.T)
		}
	}
	for _, d := range used(x.T.Rank(), batchX, contractX) {
		dims = append(dims, x.T.Shape[d])
	}
	for _, d := range used(y.T.Rank(), batchY, contractY) {
		dims = append(dims, y.T.Shape[d])
	}
	attrs := "{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = " + intList(batchX) +
		", rhs_batching_dimensions = " + intList(batchY) + ", lhs_contracting_dimensions = " + intList(contractX) +
		", rhs_contracting_dimensions = " + intList(contractY) +
		">, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]}"
	return b.op("stablehlo.dot_general", T(out, dims...), attrs, x, y)
}

// reducerKey names the region of a reducer: its text depends only on the
// reducer, the element type and the builder's nesting depth.
type reducerKey struct {
	r     Reducer
	elem  Elem
	depth int
}

// reducerRegions holds the text of each reducer region built so far.
var reducerRegions struct {
	sync.RWMutex
	m map[reducerKey]string
}

// reducerRegion returns the region that combines two elem values with r,
// built once per reducer, element type and depth.
func (b *Builder) reducerRegion(r Reducer, elem Elem) string {
	k := reducerKey{r, elem, b.depth}
	reducerRegions.RLock()
	body, ok := reducerRegions.m[k]
	reducerRegions.RUnlock()
	if ok {
		return body
	}
	st := T(elem)
	body = b.region([]Type{st, st}, func(rb *Builder, a []*Value) []*Value {
		switch r {
		case ReduceMax:
			return []*Value{rb.Max(a[0], a[1])}
		case ReduceMin:
			return []*Value{rb.Min(a[0], a[1])}
		}
		return []*Value{rb.binary(string(r), a[0], a[1])}
	})
	reducerRegions.Lock()
	if reducerRegions.m == nil {
		reducerRegions.m = map[reducerKey]string{}
	}
	reducerRegions.m[k] = body
	reducerRegions.Unlock()
	return body
}
