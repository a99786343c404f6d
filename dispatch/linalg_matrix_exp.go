package dispatch

import (
	"torchtpu/hlo"
)

// mexpB holds the coefficients of the degree-18 Taylor approximant of
// Bader, Blanes and Casas ("Computing the matrix exponential with an
// optimized Taylor polynomial approximation", Mathematics 7, 2019), as
// PyTorch's kernel uses them: B_i = sum_j mexpB[i][j] P_j with the powers
// P = (I, A, A^2, A^3, A^6); then A9 = B_0 B_4 + B_3 and
// T18 = B_1 + (B_2 + A9) A9.
var mexpB = [5][5]float64{
	{0, -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0},
	{0, 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01, -6.37898194594723280150e-04},
	{-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02, -6.98210122488052056106e-03, 3.34975017086070470649e-05},
	{-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02, 2.95552570429315521194e-02, -1.39180257516060693404e-05},
	{0, 0, -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05},
}

// mexpT18 evaluates the degree-18 approximant at x with five matrix products.
func mexpT18(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	x2 := luMatmul(b, x, x)
	x3 := luMatmul(b, x2, x)
	x6 := luMatmul(b, x3, x3)
	pows := []*hlo.Value{luEye(b, x.T.Elem, x.T.Shape), x, x2, x3, x6}
	var bs [5]*hlo.Value
	for i := range bs {
		var acc *hlo.Value
		for j, p := range pows {
			if mexpB[i][j] == 0 {
				continue
			}
			t := b.Mul(p, b.Constant(x.T, mexpB[i][j]))
			if acc == nil {
				acc = t
			} else {
				acc = b.Add(acc, t)
			}
		}
		bs[i] = acc
	}
	a9 := b.Add(bs[3], luMatmul(b, bs[0], bs[4]))
	return b.Add(bs[1], luMatmul(b, b.Add(bs[2], a9), a9))
}

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
// most mexpTheta, the degree-18 approximant is evaluated, and the
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
	scale := b.BroadcastInDim(b.Pow(b.Constant(bt, 2), lg), a.T.Shape, bdims)
	x := b.Div(a, scale)
	p := mexpT18(b, x)
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

// linalgMatrixExp is linalg_matrix_exp(self); half types compute in float32.
func linalgMatrixExp(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := luSquareCheck("linalg.matrix_exp", m, "A"); err != nil {
		return nil, err
	}
	if m.DType.IsComplex() {
		return nil, ErrRunOnCPU
	}
	if !m.DType.IsFloat() {
		return nil, Errorf("linalg.matrix_exp: Expected a floating point or complex tensor as input. Got %s", scalarTypeName(m.DType))
	}
	a := c.T(0)
	if m.Numel() == 0 {
		return []*hlo.Value{a}, nil
	}
	if m.DType == Float16 || m.DType == BFloat16 {
		return []*hlo.Value{c.B.Convert(matrixExp(c.B, c.B.Convert(a, hlo.F32)), a.T.Elem)}, nil
	}
	return []*hlo.Value{matrixExp(c.B, a)}, nil
}

func init() {
	def("aten::linalg_matrix_exp", linalgMatrixExp)
}
