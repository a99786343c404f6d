package dispatch

import (
	"torchtpu/hlo"
)

// Helpers shared by the triangular, Cholesky and LU rules. Matrices live in
// the last two dimensions of a value; every leading dimension is a batch
// dimension.

// luBatch returns the batch dimensions of shape (all but the last two).
func luBatch(shape []int64) []int64 { return append([]int64{}, shape[:len(shape)-2]...) }

// luWith returns batch followed by dims.
func luWith(batch []int64, dims ...int64) []int64 {
	return append(append([]int64{}, batch...), dims...)
}

// luSeq returns 0, 1, ..., n-1.
func luSeq(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i)
	}
	return s
}

// luMatmul multiplies the matrices of x (..., m, k) and y (..., k, n), whose
// batch dimensions are equal.
func luMatmul(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	r := x.T.Rank()
	batch := luSeq(r - 2)
	return b.DotGeneral(x, y, batch, batch, []int64{int64(r - 1)}, []int64{int64(r - 2)})
}

// luMT swaps the last two dimensions of x.
func luMT(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	r := x.T.Rank()
	perm := luSeq(r)
	perm[r-2], perm[r-1] = perm[r-1], perm[r-2]
	return b.Transpose(x, perm...)
}

// luBandMask returns a boolean mask of the given shape (batch..., m, n) that
// holds where col - row >= k when upper (k = 0: the upper triangle) and where
// col - row <= k otherwise.
func luBandMask(b *hlo.Builder, shape []int64, upper bool, k int64) *hlo.Value {
	r := len(shape)
	t := hlo.T(hlo.S64, shape...)
	row := b.Iota(t, r-2)
	col := b.Iota(t, r-1)
	diff := b.Sub(col, row)
	kk := b.ConstantInt(t, k)
	if upper {
		return b.Compare(hlo.GE, diff, kk)
	}
	return b.Compare(hlo.LE, diff, kk)
}

// luTriu keeps the entries of x with col - row >= k and zeroes the rest.
func luTriu(b *hlo.Builder, x *hlo.Value, k int64) *hlo.Value {
	return b.Select(luBandMask(b, x.T.Shape, true, k), x, b.Constant(x.T, 0))
}

// luTril keeps the entries of x with col - row <= k and zeroes the rest.
func luTril(b *hlo.Builder, x *hlo.Value, k int64) *hlo.Value {
	return b.Select(luBandMask(b, x.T.Shape, false, k), x, b.Constant(x.T, 0))
}

// luEye returns identity matrices of shape (batch..., m, n) and element e.
func luEye(b *hlo.Builder, e hlo.Elem, shape []int64) *hlo.Value {
	t := hlo.T(hlo.S64, shape...)
	eq := b.Compare(hlo.EQ, b.Iota(t, len(shape)-2), b.Iota(t, len(shape)-1))
	return b.Select(eq, b.Constant(hlo.T(e, shape...), 1), b.Constant(hlo.T(e, shape...), 0))
}

// luDiag returns the main diagonal of the square matrices of x, shape (batch..., n).
func luDiag(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	r := x.T.Rank()
	eq := luBandMask(b, x.T.Shape, true, 0)
	eq = b.And(eq, luBandMask(b, x.T.Shape, false, 0))
	return b.Reduce(b.Select(eq, x, b.Constant(x.T, 0)), b.Constant(hlo.T(x.T.Elem), 0), hlo.ReduceSum, int64(r-1))
}

// luExpandBatch broadcasts x (..., m, n) to the batch dimensions batch.
func luExpandBatch(b *hlo.Builder, x *hlo.Value, batch []int64) *hlo.Value {
	r := x.T.Rank()
	return b.BroadcastTo(x, luWith(batch, x.T.Shape[r-2], x.T.Shape[r-1]))
}

// luBroadcastBatch returns the broadcast of the batch dimensions of a and b,
// or PyTorch's error when they do not broadcast.
func luBroadcastBatch(a, b []int64) ([]int64, error) {
	s, err := BroadcastShapes(luBatch(a), luBatch(b))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// luSquareCheck checks that m holds square matrices, with PyTorch's wording.
func luSquareCheck(fn string, m TensorMeta, arg string) error {
	if m.Rank() < 2 {
		return Errorf("%s: The input tensor %s must have at least 2 dimensions.", fn, arg)
	}
	if m.Sizes[m.Rank()-1] != m.Sizes[m.Rank()-2] {
		return Errorf("%s: %s must be batches of square matrices, but they are %d by %d matrices", fn, arg, m.Sizes[m.Rank()-2], m.Sizes[m.Rank()-1])
	}
	return nil
}

// luFloatCheck checks that m is float32 or float64, as LAPACK kernels need.
func luFloatCheck(fn string, m TensorMeta) error { return luDTypeCheck(fn, "", false, m) }

// luComplexCheck is luDTypeCheck for rules with a complex lowering: it
// accepts complex64 and complex128 as well.
func luComplexCheck(fn, kernel string, intKernel bool, m TensorMeta) error {
	if m.DType == Complex64 || m.DType == Complex128 {
		return nil
	}
	return luDTypeCheck(fn, kernel, intKernel, m)
}

// luMH returns the conjugate transpose of the matrices of x (the transpose
// for real x).
func luMH(b *hlo.Builder, x *hlo.Value) *hlo.Value { return luConj(b, luMT(b, x)) }

// luConj returns the complex conjugate of x, or x when it is real.
func luConj(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if !x.T.Elem.IsComplex() {
		return x
	}
	return b.Complex(b.Real(x), b.Neg(b.Imag(x)))
}

// luDTypeCheck checks that m is float32 or float64 with the error PyTorch's
// CPU kernels give otherwise: half types fail in the kernel's dispatch
// ("kernel" not implemented) or, without a kernel name, with fn's "Low
// precision" check; integer types fail with fn's floating-point check, or
// in the kernel's dispatch when intKernel holds.
func luDTypeCheck(fn, kernel string, intKernel bool, m TensorMeta) error {
	switch {
	case m.DType == Float32 || m.DType == Float64:
		return nil
	case m.DType == Float16 || m.DType == BFloat16:
		if kernel == "" {
			return Errorf("%s: Low precision dtypes not supported. Got %s", fn, scalarTypeName(m.DType))
		}
		return notImplemented(kernel, m.DType)
	case m.DType.IsComplex() && m.DType != ComplexHalf:
		return ErrRunOnCPU
	case intKernel:
		return notImplemented(kernel, m.DType)
	}
	return Errorf("%s: Expected a floating point or complex tensor as input. Got %s", fn, scalarTypeName(m.DType))
}

// luFirstIndex returns, for each batch entry of the boolean bad (batch..., n),
// the 1-based index of its first true entry, or 0 when none is, as int32.
func luFirstIndex(b *hlo.Builder, bad *hlo.Value) *hlo.Value {
	r := bad.T.Rank()
	n := bad.T.Shape[r-1]
	t := hlo.T(hlo.S32, bad.T.Shape...)
	idx := b.Add(b.Iota(t, r-1), b.ConstantInt(t, 1))
	cand := b.Select(bad, idx, b.ConstantInt(t, n+1))
	m := b.Reduce(cand, b.ConstantInt(hlo.T(hlo.S32), n+1), hlo.ReduceMin, int64(r-1))
	none := b.Compare(hlo.EQ, m, b.ConstantInt(m.T, n+1))
	return b.Select(none, b.ConstantInt(m.T, 0), m)
}

// luStarts returns dynamic-slice starts of nb zeros followed by rest.
func luStarts(b *hlo.Builder, nb int, rest ...*hlo.Value) []*hlo.Value {
	st := make([]*hlo.Value, nb, nb+len(rest))
	for d := range st {
		st[d] = b.ConstantInt(hlo.T(hlo.S64), 0)
	}
	return append(st, rest...)
}

// luRaise implements check_errors=True: it reads the int32 info values that
// infoOf computes to the host and returns PyTorch's error for the first
// nonzero one (msg gives the text for an info value; batched inputs name
// the batch element). The read computes the info values in a program of
// their own and leaves the graph as it is (rules that call it declare
// Needs.Results).
func luRaise(c *Ctx, batched bool, infoOf func() *hlo.Value, msg func(info int64) string) error {
	vals, err := c.R.Int64Values(infoOf())
	if err != nil {
		return err
	}
	for i, v := range vals {
		if v != 0 {
			if batched {
				return Errorf("(Batch element %d): %s", i, msg(v))
			}
			return Errorf("%s", msg(v))
		}
	}
	return nil
}
