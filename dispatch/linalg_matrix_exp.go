package dispatch

import (
	"torchtpu/hlo"
)

// mexpDegree is the degree of the Taylor polynomial matrixExp evaluates.
const mexpDegree = 18

// mexpTheta is the largest 1-norm for which the degree-18 Taylor polynomial
// is accurate to the rounding of e (the bounds PyTorch's CPU kernel uses);
// larger matrices are scaled down by powers of two below it.
func mexpTheta(e hlo.Elem) float64 {
	if e == hlo.F64 {
		return 1.090863719290036
	}
	return 3.010066362817634
}

// matrixExp returns exp of the square matrices of a (float32 or float64) by
// scaling and squaring: each matrix is divided by 2^s so its 1-norm is at
// most mexpTheta, the Taylor polynomial is evaluated by Horner's rule, and the
// result is squared s times (s per matrix, computed at run time).
func matrixExp(b *hlo.Builder, a *hlo.Value) *hlo.Value {
	r := a.T.Rank()
	e := a.T.Elem
	batch := luBatch(a.T.Shape)
	bt := hlo.T(e, batch...)
	norm := b.Reduce(b.Reduce(b.Abs(a), b.Constant(hlo.T(e), 0), hlo.ReduceSum, int64(r-2)),
		b.Constant(hlo.T(e), 0), hlo.ReduceMax, int64(r-2))
	// s = ceil(log2(norm/theta)) clamped to [0, 64]; a non-finite norm squares nothing.
	lg := b.Ceil(b.Div(b.Log(b.Div(norm, b.Constant(bt, mexpTheta(e)))), b.Constant(bt, 0.6931471805599453)))
	lg = b.Clamp(b.Constant(hlo.T(e), 0), lg, b.Constant(hlo.T(e), 64))
	lg = b.Select(b.IsFinite(lg), lg, b.Constant(bt, 0))
	s := b.Convert(lg, hlo.S64)
	bdims := luSeq(r - 2)
	scale := b.BroadcastInDim(b.Pow(b.Constant(bt, 2), b.Neg(lg)), a.T.Shape, bdims)
	x := b.Mul(a, scale)
	eye := luEye(b, e, a.T.Shape)
	p := eye
	for k := mexpDegree; k >= 1; k-- {
		p = b.Add(eye, b.Div(luMatmul(b, x, p), b.Constant(a.T, float64(k))))
	}
	if len(batch) == 0 {
		return b.ForN(s, []*hlo.Value{p}, func(rb *hlo.Builder, i *hlo.Value, v []*hlo.Value) []*hlo.Value {
			return []*hlo.Value{luMatmul(rb, v[0], v[0])}
		})[0]
	}
	steps := b.Reduce(s, b.ConstantInt(hlo.T(hlo.S64), 0), hlo.ReduceMax, bdims...)
	outs := b.ForN(steps, []*hlo.Value{p, s}, func(rb *hlo.Builder, i *hlo.Value, v []*hlo.Value) []*hlo.Value {
		more := rb.Compare(hlo.LT, rb.BroadcastInDim(i, batch, nil), v[1])
		sq := rb.Select(rb.BroadcastInDim(more, v[0].T.Shape, bdims), luMatmul(rb, v[0], v[0]), v[0])
		return []*hlo.Value{sq, v[1]}
	})
	return outs[0]
}

// linalgMatrixExp is linalg_matrix_exp(self).
func linalgMatrixExp(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := luSquareCheck("linalg.matrix_exp", m, "A"); err != nil {
		return nil, err
	}
	if !m.DType.IsFloat() {
		return nil, notImplemented("linalg_matrix_exp", m.DType)
	}
	a := c.T(0)
	if m.Numel() == 0 {
		return []*hlo.Value{a}, nil
	}
	if m.DType != Float64 {
		// The squarings amplify rounding errors: narrower types compute in
		// float64 to stay within PyTorch's float32 tolerance.
		return []*hlo.Value{c.B.Convert(matrixExp(c.B, c.B.Convert(a, hlo.F64)), a.T.Elem)}, nil
	}
	return []*hlo.Value{matrixExp(c.B, a)}, nil
}

func init() {
	def("aten::linalg_matrix_exp", linalgMatrixExp)
}
