package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// qrGeqrf factors a [B, m, n] by Householder reflections in LAPACK's geqrf
// layout: R on and above the diagonal, the reflectors' vectors below it (with
// an implicit 1 on the diagonal), and their scales tau [B, min(m, n)].
// Reflector j has beta = -sign(alpha) * norm, tau = (beta - alpha) / beta,
// and tau = 0 when the column below the diagonal is zero.
func qrGeqrf(b *hlo.Builder, a *hlo.Value) (*hlo.Value, *hlo.Value) {
	s := a.T.Shape
	nb, m, n := s[0], s[1], s[2]
	k := min(m, n)
	e := a.T.Elem
	tau0 := qrFill(b, e, []int64{nb, k}, 0)
	if k == 0 || nb == 0 {
		return a, tau0
	}
	outs := b.For(k, []*hlo.Value{a, tau0}, func(rb *hlo.Builder, j *hlo.Value, c []*hlo.Value) []*hlo.Value {
		a, tau := c[0], c[1]
		cs := []int64{nb, m}
		x := qrCol(rb, a, j)
		rows := qrIota(rb, cs, 1)
		jj := qrIdx(rb, j, cs)
		isDiag := rb.Compare(hlo.EQ, rows, jj)
		below := rb.Compare(hlo.GT, rows, jj)
		alpha := qrSum(rb, qrSelectZero(rb, isDiag, x), 1)
		xb := qrSelectZero(rb, below, x)
		sigma := qrSum(rb, rb.Mul(xb, xb), 1)
		norm := rb.Sqrt(rb.Add(rb.Mul(alpha, alpha), sigma))
		zero, one := qrFill(rb, e, []int64{nb}, 0), qrFill(rb, e, []int64{nb}, 1)
		beta := rb.Select(rb.Compare(hlo.LT, alpha, zero), norm, rb.Neg(norm))
		trivial := rb.Compare(hlo.EQ, sigma, zero)
		beta = rb.Select(trivial, alpha, beta)
		t := rb.Select(trivial, zero, rb.Div(rb.Sub(beta, alpha), rb.Select(trivial, one, beta)))
		v := rb.Div(xb, qrPerBatch(rb, rb.Select(trivial, one, rb.Sub(alpha, beta)), cs))
		v = rb.Select(isDiag, qrFill(rb, e, cs, 1), v)
		// Columns right of j get H = I - tau v v^T.
		vb := qrAlong(rb, v, s, 1)
		w := qrSum(rb, rb.Mul(vb, a), 1)
		upd := rb.Mul(rb.Mul(vb, qrAlong(rb, w, s, 2)), qrPerBatch(rb, t, s))
		right := rb.Compare(hlo.GT, qrIota(rb, s, 2), qrIdx(rb, j, s))
		a = rb.Select(right, rb.Sub(a, upd), a)
		col := rb.Select(isDiag, qrPerBatch(rb, beta, cs), rb.Select(below, v, x))
		a = qrSetCol(rb, a, col, j)
		ts := []int64{nb, k}
		tau = rb.Select(rb.Compare(hlo.EQ, qrIota(rb, ts, 1), qrIdx(rb, j, ts)), qrPerBatch(rb, t, ts), tau)
		return []*hlo.Value{a, tau}
	})
	return outs[0], outs[1]
}

// qrReflect applies Q = H_0 H_1 ... H_{k-1}, the reflectors stored in the
// columns of a [B, r, *] with scales tau [B, k], to c: Q c or Q^T c when
// left (c is [B, r, q]), c Q or c Q^T otherwise (c is [B, p, r]).
func qrReflect(b *hlo.Builder, a, tau, c *hlo.Value, left, trans bool) *hlo.Value {
	nb, r := a.T.Shape[0], a.T.Shape[1]
	k := tau.T.Shape[1]
	if k == 0 || nb == 0 || c.T.NumElements() == 0 {
		return c
	}
	e := a.T.Elem
	s := c.T.Shape
	reverse := left != trans
	outs := b.For(k, []*hlo.Value{c, a, tau}, func(rb *hlo.Builder, i *hlo.Value, cv []*hlo.Value) []*hlo.Value {
		c, a, tau := cv[0], cv[1], cv[2]
		j := i
		if reverse {
			j = rb.Sub(rb.ConstantInt(hlo.T(hlo.S64), k-1), i)
		}
		vs := []int64{nb, r}
		x := qrCol(rb, a, j)
		rows := qrIota(rb, vs, 1)
		jj := qrIdx(rb, j, vs)
		v := rb.Select(rb.Compare(hlo.EQ, rows, jj), qrFill(rb, e, vs, 1),
			qrSelectZero(rb, rb.Compare(hlo.GT, rows, jj), x))
		t := qrPerBatch(rb, qrAt2(rb, tau, j), s)
		var upd *hlo.Value
		if left {
			vb := qrAlong(rb, v, s, 1)
			w := qrSum(rb, rb.Mul(vb, c), 1)
			upd = rb.Mul(vb, qrAlong(rb, w, s, 2))
		} else {
			vb := qrAlong(rb, v, s, 2)
			w := qrSum(rb, rb.Mul(c, vb), 2)
			upd = rb.Mul(qrAlong(rb, w, s, 1), vb)
		}
		return []*hlo.Value{rb.Sub(c, rb.Mul(t, upd)), a, tau}
	})
	return outs[0]
}

// qrAt2 returns x[:, j] of x [B, k] as [B].
func qrAt2(b *hlo.Builder, x, j *hlo.Value) *hlo.Value {
	z := b.ConstantInt(hlo.T(hlo.S64), 0)
	return b.Reshape(b.DynamicSlice(x, []*hlo.Value{z, j}, []int64{x.T.Shape[0], 1}), x.T.Shape[0])
}

// geqrf is geqrf(self) -> (a, tau).
func geqrf(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() < 2 {
		return nil, Errorf("torch.geqrf: input must have at least 2 dimensions.")
	}
	if err := qrFloatCheck("geqrf_cpu", m); err != nil {
		return nil, err
	}
	b := c.B
	a, tau := qrGeqrf(b, qrFlat(b, c.T(0)))
	batch := m.Sizes[:m.Rank()-2]
	return []*hlo.Value{qrUnflat(b, a, batch), qrUnflat(b, tau, batch)}, nil
}

// householderProduct is linalg_householder_product(input, tau): the first n
// columns of H_0 ... H_{k-1}.
func householderProduct(c *Ctx) ([]*hlo.Value, error) {
	m, tm := c.Meta(0), c.Meta(1)
	const fn = "torch.linalg.householder_product"
	if m.Rank() < 2 {
		return nil, Errorf("%s: input must have at least 2 dimensions.", fn)
	}
	r, n := m.Sizes[m.Rank()-2], m.Sizes[m.Rank()-1]
	if r < n {
		return nil, Errorf("%s: input.shape[-2] must be greater than or equal to input.shape[-1]", fn)
	}
	if tm.Rank() == 0 || tm.Sizes[tm.Rank()-1] > n {
		return nil, Errorf("%s: input.shape[-1] must be greater than or equal to tau.shape[-1]", fn)
	}
	if tm.Rank() != m.Rank()-1 {
		return nil, Errorf("%s: Expected tau to have one dimension less than input, but got tau.ndim equal to %d and input.ndim is equal to %d", fn, tm.Rank(), m.Rank())
	}
	batch := m.Sizes[:m.Rank()-2]
	if !slices.Equal(tm.Sizes[:tm.Rank()-1], batch) {
		return nil, Errorf("%s: Expected batch dimensions of tau to be equal to input.shape[:-2], but got %s", fn, shapeString(tm.Sizes[:tm.Rank()-1]))
	}
	if tm.DType != m.DType {
		return nil, Errorf("%s: tau dtype %s does not match input dtype %s", fn, tm.DType, m.DType)
	}
	if err := qrFloatCheck("orgqr_cpu", m); err != nil {
		return nil, err
	}
	b := c.B
	a := qrFlat(b, c.T(0))
	tau := b.Reshape(c.T(1), a.T.Shape[0], tm.Sizes[tm.Rank()-1])
	q := qrReflect(b, a, tau, qrEye(b, a.T.Elem, a.T.Shape), true, false)
	return []*hlo.Value{qrUnflat(b, q, batch)}, nil
}

// ormqr is ormqr(input, tau, other, left, transpose): other multiplied by
// the Q of a geqrf factorization, from the left or right, maybe transposed.
func ormqr(c *Ctx) ([]*hlo.Value, error) {
	m, tm, om := c.Meta(0), c.Meta(1), c.Meta(2)
	left, trans := c.Bool(3, true), c.Bool(4, false)
	const fn = "torch.ormqr"
	if m.Rank() < 2 {
		return nil, Errorf("%s: input must have at least 2 dimensions.", fn)
	}
	if om.Rank() < 2 {
		return nil, Errorf("%s: other must have at least 2 dimensions.", fn)
	}
	od := 2
	if !left {
		od = 1
	}
	mn := om.Sizes[om.Rank()-od]
	if m.Sizes[m.Rank()-2] != mn {
		return nil, Errorf("%s: other.shape[%d] must be equal to input.shape[-2]", fn, -od)
	}
	k := tm.Sizes[tm.Rank()-1]
	if tm.Rank() != m.Rank()-1 || k != min(mn, m.Sizes[m.Rank()-1]) {
		return nil, Errorf("%s: tau.shape[-1] must be equal to min(other.shape[%d], input.shape[-1])", fn, -od)
	}
	batch := m.Sizes[:m.Rank()-2]
	if !slices.Equal(tm.Sizes[:tm.Rank()-1], batch) {
		return nil, Errorf("%s: Expected batch dimensions of tau to be equal to input.shape[:-2], but got %s", fn, shapeString(tm.Sizes[:tm.Rank()-1]))
	}
	if om.Rank() != m.Rank() || !slices.Equal(om.Sizes[:om.Rank()-2], batch) {
		return nil, Errorf("%s: Expected batch dimensions of other to be equal to input.shape[:-2], but got %s", fn, shapeString(om.Sizes[:om.Rank()-2]))
	}
	if tm.DType != m.DType {
		return nil, Errorf("%s: Expected input and tau to have the same dtype, but input has dtype %s and tau has dtype %s", fn, m.DType, tm.DType)
	}
	if om.DType != m.DType {
		return nil, Errorf("%s: Expected input and other to have the same dtype, but input has dtype %s and other has dtype %s", fn, m.DType, om.DType)
	}
	if err := qrFloatCheck("ormqr_cpu", m); err != nil {
		return nil, err
	}
	b := c.B
	a := qrFlat(b, c.T(0))
	tau := b.Reshape(c.T(1), a.T.Shape[0], k)
	out := qrReflect(b, a, tau, qrFlat(b, c.T(2)), left, trans)
	return []*hlo.Value{qrUnflat(b, out, batch)}, nil
}

// linalgQR is linalg_qr(A, mode): Q and R with mode "reduced" (Q m x k),
// "complete" (Q m x m) or "r" (R only; Q is empty).
func linalgQR(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	mode := c.Str(1, "reduced")
	if m.Rank() < 2 {
		return nil, Errorf("linalg.qr: The input tensor A must have at least 2 dimensions.")
	}
	if mode != "reduced" && mode != "complete" && mode != "r" {
		return nil, Errorf("qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'", mode)
	}
	if err := qrFloatCheck("linalg_qr_cpu", m); err != nil {
		return nil, err
	}
	b := c.B
	rows, cols := m.Sizes[m.Rank()-2], m.Sizes[m.Rank()-1]
	k := min(rows, cols)
	batch := m.Sizes[:m.Rank()-2]
	a, tau := qrGeqrf(b, qrFlat(b, c.T(0)))
	rr := k
	if mode == "complete" {
		rr = rows
	}
	r := b.Slice(a, []int64{0, 0, 0}, []int64{a.T.Shape[0], rr, cols}, []int64{1, 1, 1})
	r = qrSelectZero(b, qrTriMask(b, r.T.Shape, 0, true), r)
	var q *hlo.Value
	if mode == "r" {
		q = qrFill(b, a.T.Elem, []int64{0}, 0)
	} else {
		q = qrReflect(b, a, tau, qrEye(b, a.T.Elem, []int64{a.T.Shape[0], rows, rr}), true, false)
		q = qrUnflat(b, q, batch)
	}
	return []*hlo.Value{q, qrUnflat(b, r, batch)}, nil
}

func init() {
	def("aten::geqrf", geqrf, "aten::geqrf.a")
	def("aten::linalg_householder_product", householderProduct)
	def("aten::ormqr", ormqr)
	def("aten::linalg_qr", linalgQR)
}
