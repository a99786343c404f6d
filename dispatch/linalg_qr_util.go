package dispatch

import (
	"torchtpu/hlo"
)

// The helpers below work on matrices flattened to rank 3, [batch, rows,
// cols], so the loops of the factorizations (Householder QR, Jacobi) are
// written once for any number of leading dimensions.

// qrBatchSize is the product of the sizes before the last two.
func qrBatchSize(sizes []int64) int64 {
	n := int64(1)
	for _, s := range sizes[:len(sizes)-2] {
		n *= s
	}
	return n
}

// qrFlat reshapes x of sizes [..., m, n] to [batch, m, n].
func qrFlat(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	s := x.T.Shape
	return b.Reshape(x, qrBatchSize(s), s[len(s)-2], s[len(s)-1])
}

// qrUnflat reshapes x of [batch, ...tail] to batch dims followed by tail.
func qrUnflat(b *hlo.Builder, x *hlo.Value, batch []int64) *hlo.Value {
	dims := append(append([]int64{}, batch...), x.T.Shape[1:]...)
	return b.Reshape(x, dims...)
}

// qrMatmul is the batched product x @ y of [B, m, k] and [B, k, n].
func qrMatmul(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	return b.DotGeneral(x, y, []int64{0}, []int64{0}, []int64{2}, []int64{1})
}

// qrMatmulTN is the batched product x^T @ y of [B, k, m] and [B, k, n].
func qrMatmulTN(b *hlo.Builder, x, y *hlo.Value) *hlo.Value {
	return b.DotGeneral(x, y, []int64{0}, []int64{0}, []int64{1}, []int64{1})
}

// qrTrans swaps the last two dims of a rank-3 value.
func qrTrans(b *hlo.Builder, x *hlo.Value) *hlo.Value { return b.Transpose(x, 0, 2, 1) }

// qrIota is an int64 iota of shape counting along dim.
func qrIota(b *hlo.Builder, shape []int64, dim int) *hlo.Value {
	return b.Iota(hlo.T(hlo.S64, shape...), dim)
}

// qrFill is a constant of element e and shape filled with v.
func qrFill(b *hlo.Builder, e hlo.Elem, shape []int64, v float64) *hlo.Value {
	return b.BroadcastTo(b.Scalar(e, v), shape)
}

// qrIdx broadcasts the scalar int64 i to shape.
func qrIdx(b *hlo.Builder, i *hlo.Value, shape []int64) *hlo.Value { return b.BroadcastTo(i, shape) }

// qrPerBatch broadcasts x of [B] or [B, k] to shape, keeping its leading dims.
func qrPerBatch(b *hlo.Builder, x *hlo.Value, shape []int64) *hlo.Value {
	mapping := make([]int64, x.T.Rank())
	for i := range mapping {
		mapping[i] = int64(i)
	}
	return b.BroadcastInDim(x, shape, mapping)
}

// qrAlong broadcasts x of [B, k] to shape [B, ., .] along dim (1 or 2).
func qrAlong(b *hlo.Builder, x *hlo.Value, shape []int64, dim int64) *hlo.Value {
	return b.BroadcastInDim(x, shape, []int64{0, dim})
}

// qrSum sums x over dims.
func qrSum(b *hlo.Builder, x *hlo.Value, dims ...int64) *hlo.Value {
	return b.Reduce(x, b.Scalar(x.T.Elem, 0), hlo.ReduceSum, dims...)
}

// qrMaxAll is the largest element of x.
func qrMaxAll(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	dims := make([]int64, x.T.Rank())
	for i := range dims {
		dims[i] = int64(i)
	}
	return b.Reduce(x, b.Scalar(x.T.Elem, hlo.Lowest(x.T.Elem)), hlo.ReduceMax, dims...)
}

// qrCol returns column j (a scalar int64 value) of x [B, m, n] as [B, m].
func qrCol(b *hlo.Builder, x, j *hlo.Value) *hlo.Value {
	s := x.T.Shape
	z := b.ConstantInt(hlo.T(hlo.S64), 0)
	return b.Reshape(b.DynamicSlice(x, []*hlo.Value{z, z, j}, []int64{s[0], s[1], 1}), s[0], s[1])
}

// qrSetCol writes col [B, m] into column j of x.
func qrSetCol(b *hlo.Builder, x, col, j *hlo.Value) *hlo.Value {
	s := x.T.Shape
	z := b.ConstantInt(hlo.T(hlo.S64), 0)
	return b.DynamicUpdateSlice(x, b.Reshape(col, s[0], s[1], 1), []*hlo.Value{z, z, j})
}

// qrEye is the [B, m, n] identity (ones on the main diagonal).
func qrEye(b *hlo.Builder, e hlo.Elem, shape []int64) *hlo.Value {
	eq := b.Compare(hlo.EQ, qrIota(b, shape, 1), qrIota(b, shape, 2))
	return b.Convert(eq, e)
}

// qrTriMask is true where col - row >= k (upper) of shape [B, m, n], or
// where col - row <= k (lower).
func qrTriMask(b *hlo.Builder, shape []int64, k int64, upper bool) *hlo.Value {
	d := b.Sub(qrIota(b, shape, 2), qrIota(b, shape, 1))
	kk := qrFill(b, hlo.S64, shape, float64(k))
	if upper {
		return b.Compare(hlo.GE, d, kk)
	}
	return b.Compare(hlo.LE, d, kk)
}

// qrSelectZero keeps x where mask holds and puts zeros elsewhere.
func qrSelectZero(b *hlo.Builder, mask, x *hlo.Value) *hlo.Value {
	return b.Select(mask, x, qrFill(b, x.T.Elem, x.T.Shape, 0))
}

// qrEps is the machine epsilon of float element e.
func qrEps(e hlo.Elem) float64 {
	if e == hlo.F64 {
		return 2.220446049250313e-16
	}
	return 1.1920928955078125e-07
}

// qrFloatCheck rejects non-float inputs as LAPACK-backed kernels do.
func qrFloatCheck(op string, m TensorMeta) error {
	if m.DType.IsComplex() {
		return ErrRunOnCPU
	}
	if m.DType != Float32 && m.DType != Float64 {
		return notImplemented(op, m.DType)
	}
	return nil
}
