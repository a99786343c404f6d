package dispatch

import (
	"sort"

	"torchtpu/hlo"
)

// wrapDim wraps a possibly negative dim into [0, rank) as PyTorch's
// maybe_wrap_dim does (a zero-dimensional tensor accepts 0 and -1).
func wrapDim(d int64, rank int) (int64, error) {
	r := int64(max(rank, 1))
	if d < -r || d >= r {
		return 0, IndexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -r, r-1, d)
	}
	if d < 0 {
		d += r
	}
	return d, nil
}

// reduceDims resolves the dim-list argument i of a reduction over a tensor
// of rank rank: absent means all dims, and so does an empty list when
// emptyAll. The result is sorted, wrapped, and free of dims a
// zero-dimensional tensor does not have.
func (c *Ctx) reduceDims(i int, rank int, emptyAll bool) (dims []int64, all bool, err error) {
	if !c.Has(i) || (len(c.Args[i].Ints) == 0 && emptyAll) {
		return iotaDims(rank), true, nil
	}
	if rank > maxDimMask {
		return nil, false, Errorf("only tensors with up to %d dims are supported", maxDimMask)
	}
	seen := map[int64]bool{}
	for _, d := range c.Args[i].Ints {
		w, err := wrapDim(d, rank)
		if err != nil {
			return nil, false, err
		}
		if seen[w] {
			return nil, false, Errorf("dim %d appears multiple times in the list of dims", w)
		}
		seen[w] = true
		if int(w) < rank {
			dims = append(dims, w)
		}
	}
	sort.Slice(dims, func(a, b int) bool { return dims[a] < dims[b] })
	return dims, false, nil
}

// maxDimMask is the most dimensions a reduction over listed dims takes:
// CPU's kernels mark the reduced dims in a 64-bit mask.
const maxDimMask = 64

func iotaDims(rank int) []int64 {
	dims := make([]int64, rank)
	for i := range dims {
		dims[i] = int64(i)
	}
	return dims
}

// keepShape is sizes with the reduced dims set to 1.
func keepShape(sizes, dims []int64) []int64 {
	out := append([]int64{}, sizes...)
	for _, d := range dims {
		out[d] = 1
	}
	return out
}

// finish reshapes a reduction result for keepdim.
func finish(b *hlo.Builder, r *hlo.Value, sizes, dims []int64, keepdim bool) *hlo.Value {
	if keepdim {
		return b.Reshape(r, keepShape(sizes, dims)...)
	}
	return r
}

// accumElem is the element type a sum or product in d accumulates in.
func accumElem(d DType) hlo.Elem {
	if d == Float16 || d == BFloat16 {
		return hlo.F32
	}
	return d.Elem()
}

// cpuAccElem is the element type CPU's kernels accumulate d in where they use
// at::acc_type on the CPU (cumsum, cumprod, and var and std's Welford sums):
// float64 for float32 and complex128 for complex64, float32 for half types.
// cumsum of [1e8, 1, -1e8] is [1e8, 1e8, 1] there, not [1e8, 1e8, 0].
func cpuAccElem(d DType) hlo.Elem {
	switch d {
	case Float32:
		return hlo.F64
	case Complex64:
		return hlo.C128
	}
	return accumElem(d)
}

// sumProd reduces x (already of dtype d) over dims with add or multiply.
func sumProd(b *hlo.Builder, x *hlo.Value, d DType, dims []int64, mul bool) *hlo.Value {
	acc := accumElem(d)
	xa := b.Convert(x, acc)
	var r *hlo.Value
	switch {
	case acc == hlo.Pred && mul:
		r = b.Reduce(xa, b.Scalar(acc, 1), hlo.ReduceAnd, dims...)
	case acc == hlo.Pred:
		r = b.Reduce(xa, b.Scalar(acc, 0), hlo.ReduceOr, dims...)
	case mul:
		r = b.Reduce(xa, b.Scalar(acc, 1), hlo.ReduceMul, dims...)
	default:
		r = b.Reduce(xa, b.Scalar(acc, 0), hlo.ReduceSum, dims...)
	}
	return b.Convert(r, d.Elem())
}

// sumDType is the result dtype of sum or prod of input in with the optional
// dtype argument i.
func (c *Ctx) sumDType(in DType, i int) (DType, error) {
	def := in
	if in.IsIntegral(true) {
		def = Int64
	}
	d, err := c.DTypeArg(i, def)
	if err == nil && d.IsFloat8() {
		return 0, ErrRunOnCPU // CPU sums float8 only into another dtype: it raises its error
	}
	return d, err
}

// sumRule builds sum or prod. dimIdx < 0 reduces everything; single says the
// dim argument is one int rather than a list.
func sumRule(mul bool, dimIdx, keepIdx, dtypeIdx int, single bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		d, err := c.sumDType(m.DType, dtypeIdx)
		if err != nil {
			return nil, err
		}
		dims, keep, err := c.resolveDims(dimIdx, keepIdx, single, m.Rank())
		if err != nil {
			return nil, err
		}
		x := c.B.Convert(c.T(0), d.Elem())
		return []*hlo.Value{finish(c.B, sumProd(c.B, x, d, dims, mul), m.Sizes, dims, keep)}, nil
	}
}

// resolveDims reads the dim and keepdim arguments of a reduction.
func (c *Ctx) resolveDims(dimIdx, keepIdx int, single bool, rank int) ([]int64, bool, error) {
	if dimIdx < 0 {
		return iotaDims(rank), false, nil
	}
	keep := c.Bool(keepIdx, false)
	if single {
		if rank > maxDimMask {
			return nil, false, Errorf("only tensors with up to %d dims are supported", maxDimMask)
		}
		w, err := wrapDim(c.Int(dimIdx, 0), rank)
		if err != nil {
			return nil, false, err
		}
		if int(w) >= rank {
			return nil, keep, nil
		}
		return []int64{w}, keep, nil
	}
	dims, _, err := c.reduceDims(dimIdx, rank, true)
	return dims, keep, err
}

func meanRule(dimIdx, keepIdx, dtypeIdx int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		d := m.DType
		if c.Has(dtypeIdx) {
			var err error
			if d, err = c.DTypeArg(dtypeIdx, d); err != nil {
				return nil, err
			}
			if !d.IsFloat() && !d.IsComplex() {
				return nil, Errorf("mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: %s", scalarTypeName(d))
			}
		} else if !d.IsFloat() && !d.IsComplex() {
			return nil, Errorf("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s", scalarTypeName(d))
		}
		if d.IsFloat8() {
			return nil, ErrRunOnCPU // CPU averages float8 only into another dtype: it raises its error
		}
		dims, keep, err := c.resolveDims(dimIdx, keepIdx, false, m.Rank())
		if err != nil {
			return nil, err
		}
		r := meanOf(c.B, c.B.Convert(c.T(0), d.Elem()), m.Sizes, dims)
		return []*hlo.Value{finish(c.B, c.B.Convert(r, d.Elem()), m.Sizes, dims, keep)}, nil
	}
}

// meanOf averages float x over dims, in float32 at least; the result is in
// the accumulation type.
func meanOf(b *hlo.Builder, x *hlo.Value, sizes, dims []int64) *hlo.Value {
	acc := accumElem(FromElem(x.T.Elem))
	s := b.Reduce(b.Convert(x, acc), b.Scalar(acc, 0), hlo.ReduceSum, dims...)
	n := int64(1)
	for _, d := range dims {
		n *= sizes[d]
	}
	return b.Div(s, b.BroadcastTo(b.Scalar(acc, float64(n)), s.T.Shape))
}

// checkNonEmpty checks that a max/min-like reduction has something to pick.
func checkNonEmpty(name string, m TensorMeta, dims []int64, all bool) error {
	if all && m.Numel() == 0 {
		return Errorf("%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", name)
	}
	for _, d := range dims {
		if m.Sizes[d] == 0 {
			return IndexErrorf("%s(): Expected reduction dim %d to have non-zero size.", name, d)
		}
	}
	return nil
}

// extreme reduces x over dims with max (or min); NaN propagates.
func extreme(b *hlo.Builder, x *hlo.Value, dims []int64, isMax bool) *hlo.Value {
	e := x.T.Elem
	switch {
	case e == hlo.Pred && isMax:
		return b.Reduce(x, b.Scalar(e, 0), hlo.ReduceOr, dims...)
	case e == hlo.Pred:
		return b.Reduce(x, b.Scalar(e, 1), hlo.ReduceAnd, dims...)
	case isMax:
		return b.Reduce(x, b.Scalar(e, hlo.Lowest(e)), hlo.ReduceMax, dims...)
	}
	return b.Reduce(x, b.Scalar(e, hlo.Highest(e)), hlo.ReduceMin, dims...)
}

// amaxRule is amax/amin(self, dim=[], keepdim=False).
func amaxRule(name string, isMax bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dims, all, err := c.reduceDims(1, m.Rank(), true)
		if err != nil {
			return nil, err
		}
		if err := checkNonEmpty(name, m, dims, all); err != nil {
			return nil, err
		}
		return []*hlo.Value{finish(c.B, extreme(c.B, c.T(0), dims, isMax), m.Sizes, dims, c.Bool(2, false))}, nil
	}
}

// maxAllRule is max(self)/min(self) over every element.
func maxAllRule(name string, isMax bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dims := iotaDims(m.Rank())
		if err := checkNonEmpty(name, m, dims, true); err != nil {
			return nil, err
		}
		return []*hlo.Value{extreme(c.B, c.T(0), dims, isMax)}, nil
	}
}

// argExtreme returns the winning values and int64 indices of x over dim.
func argExtreme(b *hlo.Builder, x *hlo.Value, dim int64, isMax bool) (*hlo.Value, *hlo.Value) {
	cmp := hlo.LT
	if isMax {
		cmp = hlo.GT
	}
	idx := b.Iota(x.T.WithElem(hlo.S64), int(dim))
	return b.ReduceArg(x, idx, dim, cmp)
}

// maxDimRule is max.dim/min.dim(self, dim, keepdim) -> (values, indices).
func maxDimRule(name string, isMax bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		dims, keep, err := c.resolveDims(1, 2, true, m.Rank())
		if err != nil {
			return nil, err
		}
		if err := checkNonEmpty(name, m, dims, false); err != nil {
			return nil, err
		}
		if len(dims) == 0 { // zero-dimensional input
			return []*hlo.Value{c.T(0), c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
		}
		v, i := argExtreme(c.B, c.T(0), dims[0], isMax)
		return []*hlo.Value{finish(c.B, v, m.Sizes, dims, keep), finish(c.B, i, m.Sizes, dims, keep)}, nil
	}
}

// argmaxRule is argmax/argmin(self, dim=None, keepdim=False).
func argmaxRule(name string, isMax bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if m.DType == Bool {
			return nil, Errorf("%s(): does not support bool input", name)
		}
		keep := c.Bool(2, false)
		if !c.Has(1) {
			if m.Numel() == 0 {
				return nil, IndexErrorf("%s(): Expected reduction dim to be specified for input.numel() == 0.", name)
			}
			flat := c.B.Reshape(c.T(0), m.Numel())
			_, i := argExtreme(c.B, flat, 0, isMax)
			if keep {
				i = c.B.Reshape(i, keepShape(m.Sizes, iotaDims(m.Rank()))...)
			}
			return []*hlo.Value{i}, nil
		}
		dims, _, err := c.resolveDims(1, 2, true, m.Rank())
		if err != nil {
			return nil, err
		}
		if err := checkNonEmpty(name, m, dims, false); err != nil {
			return nil, err
		}
		if len(dims) == 0 {
			return []*hlo.Value{c.B.ConstantInt(hlo.T(hlo.S64), 0)}, nil
		}
		_, i := argExtreme(c.B, c.T(0), dims[0], isMax)
		return []*hlo.Value{finish(c.B, i, m.Sizes, dims, keep)}, nil
	}
}

// allAnyRule builds all/any. mode: 0 full, 1 one dim, 2 a dim list (None is
// every dim; an empty list reduces nothing).
func allAnyRule(isAll bool, mode int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		var dims []int64
		keep := false
		var err error
		switch mode {
		case 0:
			dims = iotaDims(m.Rank())
		case 1:
			dims, keep, err = c.resolveDims(1, 2, true, m.Rank())
		case 2:
			keep = c.Bool(2, false)
			dims, _, err = c.reduceDims(1, m.Rank(), false)
		}
		if err != nil {
			return nil, err
		}
		x := c.T(0)
		p := x
		if x.T.Elem != hlo.Pred {
			p = c.B.Compare(hlo.NE, x, c.B.BroadcastTo(c.B.Scalar(x.T.Elem, 0), x.T.Shape))
		}
		var r *hlo.Value
		if isAll {
			r = c.B.Reduce(p, c.B.Scalar(hlo.Pred, 1), hlo.ReduceAnd, dims...)
		} else {
			r = c.B.Reduce(p, c.B.Scalar(hlo.Pred, 0), hlo.ReduceOr, dims...)
		}
		out := Bool
		if m.DType == Uint8 {
			out = Uint8
		}
		return []*hlo.Value{finish(c.B, c.B.Convert(r, out.Elem()), m.Sizes, dims, keep)}, nil
	}
}

// varRule builds var/std. corrIdx < 0 reads the bool unbiased at unbiasedIdx.
// A complex input's variance is real: the mean squared distance from the
// mean, the real parts' variance plus the imaginary parts', as on CPU.
func varRule(isStd bool, dimIdx, unbiasedIdx, corrIdx, keepIdx int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if !m.DType.IsFloat() && !m.DType.IsComplex() {
			return nil, Errorf("std and var only support floating point and complex dtypes")
		}
		correction := 1.0
		if corrIdx >= 0 {
			correction = c.Float(corrIdx, 1)
		} else if !c.Bool(unbiasedIdx, true) {
			correction = 0
		}
		var dims []int64
		var err error
		if dimIdx < 0 {
			dims = iotaDims(m.Rank())
		} else if dims, _, err = c.reduceDims(dimIdx, m.Rank(), true); err != nil {
			return nil, err
		}
		keep := keepIdx >= 0 && c.Bool(keepIdx, false)
		b := c.B
		rd := m.DType.ToReal()
		acc := cpuAccElem(rd)
		parts := []*hlo.Value{c.T(0)}
		if m.DType.IsComplex() {
			parts = []*hlo.Value{b.Real(parts[0]), b.Imag(parts[0])}
		}
		var ss *hlo.Value
		for _, p := range parts {
			x := b.Convert(p, acc)
			meanB := b.BroadcastInDim(meanOf(b, x, m.Sizes, dims), m.Sizes, keptMapping(m.Rank(), dims))
			dev := b.Sub(x, meanB)
			s := b.Reduce(b.Mul(dev, dev), b.Scalar(acc, 0), hlo.ReduceSum, dims...)
			if ss == nil {
				ss = s
			} else {
				ss = b.Add(ss, s)
			}
		}
		n := 1.0
		for _, d := range dims {
			n *= float64(m.Sizes[d])
		}
		r := b.Div(ss, b.BroadcastTo(b.Scalar(acc, max(0, n-correction)), ss.T.Shape))
		if isStd {
			r = b.Sqrt(r)
		}
		return []*hlo.Value{finish(b, b.Convert(r, rd.Elem()), m.Sizes, dims, keep)}, nil
	}
}

// keptMapping maps the dims left after reducing dims to their positions in
// the unreduced tensor, for broadcasting a reduction back.
func keptMapping(rank int, dims []int64) []int64 {
	drop := map[int64]bool{}
	for _, d := range dims {
		drop[d] = true
	}
	var out []int64
	for i := 0; i < rank; i++ {
		if !drop[int64(i)] {
			out = append(out, int64(i))
		}
	}
	return out
}

// traceRule is trace(self): the sum of a matrix's main diagonal (int64 for
// integer inputs).
func traceRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() != 2 {
		return nil, Errorf("trace: expected a matrix, but got tensor with dim %d", m.Rank())
	}
	d := m.DType
	if d.IsIntegral(true) {
		d = Int64
	}
	b := c.B
	it := hlo.T(hlo.S64, m.Sizes...)
	diag := b.Compare(hlo.EQ, b.Iota(it, 0), b.Iota(it, 1))
	x := convertTo(b, c.T(0), m.DType, d)
	x = b.Select(diag, x, full(b, d, m.Sizes, 0))
	return []*hlo.Value{sumProd(b, x, d, []int64{0, 1}, false)}, nil
}

func init() {
	def("aten::sum", sumRule(false, -1, -1, 1, false)).Range = sumRange
	def("aten::sum.dim_IntList", sumRule(false, 1, 2, 3, false), "aten::sum.IntList_out").Range = sumRange
	def("aten::prod", sumRule(true, -1, -1, 1, false))
	def("aten::prod.dim_int", sumRule(true, 1, 2, 3, true), "aten::prod.int_out")
	def("aten::mean", meanRule(-1, -1, 1), "aten::mean.dtype_out")
	def("aten::mean.dim", meanRule(1, 2, 3), "aten::mean.out")
	def("aten::amax", amaxRule("amax", true))
	def("aten::amin", amaxRule("amin", false))
	def("aten::max", maxAllRule("max", true), "aten::max.unary_out")
	def("aten::min", maxAllRule("min", false), "aten::min.unary_out")
	def("aten::max.dim", maxDimRule("max", true), "aten::max.dim_max")
	def("aten::min.dim", maxDimRule("min", false), "aten::min.dim_min")
	def("aten::max.other", arith(maxOp, false), "aten::max.out")
	def("aten::min.other", arith(minOp, false), "aten::min.out")
	def("aten::argmax", argmaxRule("argmax", true)).Range = argExtremeRange
	def("aten::argmin", argmaxRule("argmin", false)).Range = argExtremeRange
	def("aten::all", allAnyRule(true, 0), "aten::all.all_out").Range = allAnyRange(true)
	def("aten::all.dim", allAnyRule(true, 1), "aten::all.out").Range = allAnyRange(true)
	def("aten::all.dims", allAnyRule(true, 2), "aten::all.dims_out").Range = allAnyRange(true)
	def("aten::any", allAnyRule(false, 0), "aten::any.all_out").Range = allAnyRange(false)
	def("aten::any.dim", allAnyRule(false, 1), "aten::any.out").Range = allAnyRange(false)
	def("aten::any.dims", allAnyRule(false, 2), "aten::any.dims_out").Range = allAnyRange(false)
	def("aten::var.dim", varRule(false, 1, 2, -1, 3), "aten::var.out")
	def("aten::var", varRule(false, -1, 1, -1, -1), "")
	def("aten::var.correction", varRule(false, 1, -1, 2, 3), "aten::var.correction_out")
	def("aten::std.dim", varRule(true, 1, 2, -1, 3), "aten::std.out")
	def("aten::std", varRule(true, -1, 1, -1, -1), "")
	def("aten::std.correction", varRule(true, 1, -1, 2, 3), "aten::std.correction_out")
	def("aten::trace", traceRule)
}
