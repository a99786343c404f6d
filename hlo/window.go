package hlo

import (
	"fmt"
	"math"
)

// Window describes the windows of a reduce_window, one entry per dimension
// of the operand. Nil strides and dilations mean 1, nil padding means 0.
type Window struct {
	Dims, Strides, BaseDilation, WindowDilation []int64
	Padding                                     [][2]int64
}

// resolve fills in the defaults for an operand of type t and returns the
// printed attributes and the result shape.
func (w Window) resolve(t Type) (string, []int64) {
	r := t.Rank()
	s, bd, wd := ones(r, w.Strides), ones(r, w.BaseDilation), ones(r, w.WindowDilation)
	pad := w.Padding
	if pad == nil {
		pad = make([][2]int64, r)
	}
	if !(len(w.Dims) == r && len(s) == r && len(bd) == r && len(wd) == r && len(pad) == r) {
		failf("reduce_window: window of rank %d for %v", len(w.Dims), t)
	}
	shape := make([]int64, r)
	for i := range shape {
		if !(pad[i][0] >= 0 && pad[i][1] >= 0) {
			failf("reduce_window: negative padding %v", pad)
		}
		shape[i] = windowOut(t.Shape[i], bd[i], pad[i][0], pad[i][1], w.Dims[i], wd[i], s[i])
	}
	attrs := fmt.Sprintf("{base_dilations = %s, padding = %s, window_dilations = %s, window_dimensions = %s, window_strides = %s}",
		i64Array(bd), densePadding(pad), i64Array(wd), i64Array(w.Dims), i64Array(s))
	return attrs, shape
}

// ReduceWindow combines the elements of each window of x with r; padding
// takes the value of the scalar init.
func (b *Builder) ReduceWindow(x, init *Value, r Reducer, w Window) *Value {
	attrs, shape := w.resolve(x.T)
	body := b.reducerRegion(r, x.T.Elem)
	return b.opN("stablehlo.reduce_window", []Type{T(x.T.Elem, shape...)}, attrs, body, x, init)[0]
}

// ReduceWindowArg reduces the (x, idx) pairs of each window, keeping the
// element that wins under cmp (GT for max, LT for min) and, among equal
// values, the smallest index; NaN wins over everything. Padding holds the
// losing value with the largest index, so a real element always beats it.
// It returns the winning values and indices.
func (b *Builder) ReduceWindowArg(x, idx *Value, cmp string, w Window) (*Value, *Value) {
	if x.T.Rank() != idx.T.Rank() {
		failf("reduce_window: %v and indices %v", x.T, idx.T)
	}
	attrs, shape := w.resolve(x.T)
	st, it := T(x.T.Elem), T(idx.T.Elem)
	var initV *Value
	if cmp == GT {
		initV = b.Constant(st, lowest(x.T.Elem))
	} else {
		initV = b.Constant(st, highest(x.T.Elem))
	}
	if !(idx.T.Elem == S64 || idx.T.Elem == S32) {
		failf("reduce_window: indices %v are not s32 or s64", idx.T)
	}
	initI := b.ConstantInt(it, math.MaxInt64)
	if idx.T.Elem == S32 {
		initI = b.ConstantInt(it, math.MaxInt32)
	}
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
	outs := b.opN("stablehlo.reduce_window", []Type{T(x.T.Elem, shape...), T(idx.T.Elem, shape...)},
		attrs, body, x, idx, initV, initI)
	return outs[0], outs[1]
}
