package dispatch

import (
	"fmt"
	"math"

	"torchtpu/hlo"
)

// ldlOps holds the masks and per-batch index helpers of the LDL loops. The
// loops keep one column index per matrix (a 2x2 pivot advances it by two),
// so every access is a mask against that index rather than a slice.
type ldlOps struct {
	b      *hlo.Builder
	shape  []int64 // (batch..., n, c)
	vshape []int64 // (batch..., n)
	batch  []int64
	r      int
}

func newLdlOps(b *hlo.Builder, shape []int64) *ldlOps {
	r := len(shape)
	return &ldlOps{b, shape, luWith(luBatch(shape), shape[r-2]), luBatch(shape), r}
}

func (o *ldlOps) bdims() []int64 { return luSeq(o.r - 2) }

// m broadcasts a batch value to the matrix shape; v to the vector shape.
func (o *ldlOps) m(x *hlo.Value) *hlo.Value { return o.b.BroadcastInDim(x, o.shape, o.bdims()) }
func (o *ldlOps) v(x *hlo.Value) *hlo.Value { return o.b.BroadcastInDim(x, o.vshape, o.bdims()) }

// rowsIdx and colsIdx are the row and column indices of the matrix shape.
func (o *ldlOps) rowsIdx() *hlo.Value { return o.b.Iota(hlo.T(hlo.S64, o.shape...), o.r-2) }
func (o *ldlOps) colsIdx() *hlo.Value { return o.b.Iota(hlo.T(hlo.S64, o.shape...), o.r-1) }
func (o *ldlOps) vIdx() *hlo.Value    { return o.b.Iota(hlo.T(hlo.S64, o.vshape...), o.r-2) }

// row returns row i (a batch index) of x: (batch..., c).
func (o *ldlOps) row(x, i *hlo.Value) *hlo.Value {
	b := o.b
	sel := b.Select(b.Compare(hlo.EQ, o.rowsIdx(), o.m(i)), x, b.Constant(x.T, 0))
	return b.Reduce(sel, b.Constant(hlo.T(x.T.Elem), 0), hlo.ReduceSum, int64(o.r-2))
}

// col returns column j of the square x: (batch..., n).
func (o *ldlOps) col(x, j *hlo.Value) *hlo.Value {
	b := o.b
	sel := b.Select(b.Compare(hlo.EQ, o.colsIdx(), o.m(j)), x, b.Constant(x.T, 0))
	return b.Reduce(sel, b.Constant(hlo.T(x.T.Elem), 0), hlo.ReduceSum, int64(o.r-1))
}

// elem returns entry i of the vector v: (batch...).
func (o *ldlOps) elem(v, i *hlo.Value) *hlo.Value {
	b := o.b
	sel := b.Select(b.Compare(hlo.EQ, o.vIdx(), o.v(i)), v, b.Constant(v.T, 0))
	return b.Reduce(sel, b.Constant(hlo.T(v.T.Elem), 0), hlo.ReduceSum, int64(o.r-2))
}

// asRows broadcasts a row vector (batch..., c) down the rows; asCols a
// column vector (batch..., n) across the columns.
func (o *ldlOps) asRows(x *hlo.Value) *hlo.Value {
	return o.b.BroadcastInDim(x, o.shape, append(o.bdims(), int64(o.r-1)))
}
func (o *ldlOps) asCols(x *hlo.Value) *hlo.Value {
	return o.b.BroadcastInDim(x, o.shape, luSeq(o.r-1))
}

// swapRows exchanges rows i and j of x (batch indices) where on holds,
// restricted to the entries where keep holds.
func (o *ldlOps) swapRows(x, i, j, on, keep *hlo.Value) *hlo.Value {
	b := o.b
	ri, rj := o.row(x, i), o.row(x, j)
	rows := o.rowsIdx()
	on = b.And(o.m(on), keep)
	x = b.Select(b.And(on, b.Compare(hlo.EQ, rows, o.m(i))), o.asRows(rj),
		b.Select(b.And(on, b.Compare(hlo.EQ, rows, o.m(j))), o.asRows(ri), x))
	return x
}

func (o *ldlOps) scalarS64(v int64) *hlo.Value {
	return o.b.ConstantInt(hlo.T(hlo.S64, o.batch...), v)
}

// ldlFactor is LAPACK's sytf2 with uplo = 'L' (Bunch-Kaufman diagonal
// pivoting): it returns LD (L below the diagonal, D's 1x1 and 2x2 blocks on
// and next to it), pivots (1-based; a 2x2 block stores -p twice) and info.
func ldlFactor(b *hlo.Builder, a *hlo.Value) (*hlo.Value, *hlo.Value, *hlo.Value) {
	shape := a.T.Shape
	r := len(shape)
	n := shape[r-1]
	batch := luBatch(shape)
	e := a.T.Elem
	o := newLdlOps(b, shape)
	// Only the lower triangle is read; W keeps the trailing block symmetric.
	lower := luBandMask(b, shape, false, 0)
	w := b.Select(lower, a, luMT(b, a))
	piv := b.ConstantInt(hlo.T(hlo.S32, luWith(batch, n)...), 0)
	info := b.ConstantInt(hlo.T(hlo.S32, batch...), 0)
	if a.T.NumElements() == 0 {
		return luTril(b, w, 0), piv, info
	}
	alpha := (1 + math.Sqrt(17)) / 8
	outs := b.For(n, []*hlo.Value{w, piv, info, o.scalarS64(0)}, func(rb *hlo.Builder, _ *hlo.Value, s []*hlo.Value) []*hlo.Value {
		o := newLdlOps(rb, shape)
		W, piv, info, k := s[0], s[1], s[2], s[3]
		bt := hlo.T(e, batch...)
		c := func(v float64) *hlo.Value { return rb.Constant(bt, v) }
		one64 := o.scalarS64(1)
		active := rb.Compare(hlo.LT, k, o.scalarS64(n))
		vIdx := o.vIdx()
		ck := o.col(W, k)
		absakk := rb.Abs(o.elem(ck, k))
		cand := rb.Select(rb.Compare(hlo.GT, vIdx, o.v(k)), rb.Abs(ck), rb.Constant(ck.T, -1))
		colmax, imax := rb.ReduceArg(cand, vIdx, int64(r-2), hlo.GT)
		colmax = rb.Select(rb.Compare(hlo.LT, colmax, c(0)), c(0), colmax)
		ri := o.row(W, imax)
		rcand := rb.Select(rb.And(rb.Compare(hlo.GE, vIdx, o.v(k)), rb.Compare(hlo.NE, vIdx, o.v(imax))), rb.Abs(ri), rb.Constant(ri.T, -1))
		rowmax := rb.Reduce(rcand, rb.Constant(hlo.T(e), -1), hlo.ReduceMax, int64(r-2))
		aimax := rb.Abs(o.elem(ri, imax))
		zero := rb.Or(rb.Compare(hlo.EQ, rb.Max(absakk, colmax), c(0)), rb.Compare(hlo.NE, absakk, absakk))
		c1 := rb.Compare(hlo.GE, absakk, rb.Mul(c(alpha), colmax))
		c2 := rb.Compare(hlo.GE, absakk, rb.Mul(rb.Mul(c(alpha), colmax), rb.Div(colmax, rowmax)))
		c3 := rb.Compare(hlo.GE, aimax, rb.Mul(c(alpha), rowmax))
		noSwap := rb.Or(zero, rb.Or(c1, c2))
		two := rb.And(active, rb.And(rb.Not(noSwap), rb.Not(c3)))
		kp := rb.Select(noSwap, k, imax)
		kk := rb.Select(two, rb.Add(k, one64), k)
		work := rb.And(active, rb.Not(zero))
		doSwap := rb.And(work, rb.Compare(hlo.NE, kp, kk))
		rows, cols := o.rowsIdx(), o.colsIdx()
		W = o.swapRows(W, kk, kp, doSwap, rb.Compare(hlo.GE, cols, o.m(k)))
		W = luMT(rb, o.swapRows(luMT(rb, W), kk, kp, doSwap, rb.Compare(hlo.GE, cols, o.m(k))))
		// A 1x1 pivot: a symmetric rank-1 update and the scaled column.
		oneStep := rb.And(work, rb.Not(two))
		ck = o.col(W, k)
		d11 := rb.Div(c(1), o.elem(ck, k))
		x := rb.Select(rb.Compare(hlo.GT, vIdx, o.v(k)), ck, rb.Constant(ck.T, 0))
		nd := rb.Mul(rb.Neg(o.v(d11)), x)
		upd1 := rb.Add(W, rb.Mul(o.asCols(x), o.asRows(nd)))
		trail1 := rb.And(rb.Compare(hlo.GT, rows, o.m(k)), rb.Compare(hlo.GT, cols, o.m(k)))
		W1 := rb.Select(rb.And(o.m(oneStep), trail1), upd1, W)
		colK := rb.And(rb.Compare(hlo.EQ, cols, o.m(k)), rb.Compare(hlo.GT, rows, o.m(k)))
		W1 = rb.Select(rb.And(o.m(oneStep), colK), o.asCols(rb.Mul(x, o.v(d11))), W1)
		// A 2x2 pivot: columns k and k+1 are eliminated together.
		k1 := rb.Add(k, one64)
		c0, c1v := ck, o.col(W, k1)
		d21 := o.elem(c0, k1)
		dd11 := rb.Div(o.elem(c1v, k1), d21)
		dd22 := rb.Div(o.elem(c0, k), d21)
		t := rb.Div(c(1), rb.Sub(rb.Mul(dd11, dd22), c(1)))
		d21p := rb.Div(t, d21)
		ge2 := rb.Compare(hlo.GE, vIdx, o.v(rb.Add(k, o.scalarS64(2))))
		ak := rb.Select(ge2, c0, rb.Constant(c0.T, 0))
		ak1 := rb.Select(ge2, c1v, rb.Constant(c0.T, 0))
		wk := rb.Mul(o.v(d21p), rb.Sub(rb.Mul(o.v(dd11), ak), ak1))
		wkp1 := rb.Mul(o.v(d21p), rb.Sub(rb.Mul(o.v(dd22), ak1), ak))
		upd2 := rb.Sub(rb.Sub(W, rb.Mul(o.asCols(ak), o.asRows(wk))), rb.Mul(o.asCols(ak1), o.asRows(wkp1)))
		k2 := o.m(rb.Add(k, o.scalarS64(2)))
		trail2 := rb.And(rb.Compare(hlo.GE, rows, k2), rb.Compare(hlo.GE, cols, k2))
		W2 := rb.Select(rb.And(o.m(two), trail2), upd2, W1)
		below2 := rb.And(o.m(two), rb.Compare(hlo.GE, rows, k2))
		W2 = rb.Select(rb.And(below2, rb.Compare(hlo.EQ, cols, o.m(k))), o.asCols(wk), W2)
		W2 = rb.Select(rb.And(below2, rb.Compare(hlo.EQ, cols, o.m(k1))), o.asCols(wkp1), W2)
		// Mirror the lower triangle so the trailing block stays symmetric.
		W2 = rb.Select(rb.Compare(hlo.LT, rows, cols), luMT(rb, W2), W2)
		// Pivots and info.
		kp1 := rb.Convert(rb.Add(kp, one64), hlo.S32)
		vi := o.vIdx()
		atK := rb.And(o.v(active), rb.Compare(hlo.EQ, vi, o.v(k)))
		atK1 := rb.And(o.v(two), rb.Compare(hlo.EQ, vi, o.v(k1)))
		pv := rb.Select(two, rb.Neg(kp1), kp1)
		piv = rb.Select(rb.Or(atK, atK1), o.v(pv), piv)
		firstZero := rb.And(rb.And(active, zero), rb.Compare(hlo.EQ, info, rb.ConstantInt(info.T, 0)))
		info = rb.Select(firstZero, rb.Convert(rb.Add(k, one64), hlo.S32), info)
		step := rb.Select(two, o.scalarS64(2), one64)
		k = rb.Select(active, rb.Add(k, step), k)
		return []*hlo.Value{W2, piv, info, k}
	})
	return luTril(b, outs[0], 0), outs[1], outs[2]
}

// ldlSolve is LAPACK's sytrs with uplo = 'L': it solves A X = rhs from the
// factorization of ldlFactor (equal batch dimensions).
func ldlSolve(b *hlo.Builder, ld, piv, rhs *hlo.Value) *hlo.Value {
	r := ld.T.Rank()
	n := ld.T.Shape[r-1]
	batch := luBatch(ld.T.Shape)
	if rhs.T.NumElements() == 0 || n == 0 {
		return rhs
	}
	e := ld.T.Elem
	piv64 := b.Convert(piv, hlo.S64)
	// L D Y = rhs, moving forward over the pivots.
	fwd := b.For(n, []*hlo.Value{rhs, ld, piv64, newLdlOps(b, ld.T.Shape).scalarS64(0)}, func(rb *hlo.Builder, _ *hlo.Value, s []*hlo.Value) []*hlo.Value {
		B, L, P, k := s[0], s[1], s[2], s[3]
		o := newLdlOps(rb, ld.T.Shape)
		ob := newLdlOps(rb, B.T.Shape)
		one64 := o.scalarS64(1)
		active := rb.Compare(hlo.LT, k, o.scalarS64(n))
		p := o.elem(P, k)
		one := rb.And(active, rb.Compare(hlo.GT, p, o.scalarS64(0)))
		two := rb.And(active, rb.Compare(hlo.LT, p, o.scalarS64(0)))
		k1 := rb.Add(k, one64)
		all := rb.Compare(hlo.EQ, ob.colsIdx(), ob.colsIdx())
		B = ob.swapRows(B, k, rb.Sub(p, one64), rb.And(one, rb.Compare(hlo.NE, rb.Sub(p, one64), k)), all)
		pm := rb.Sub(rb.Neg(p), one64)
		B = ob.swapRows(B, k1, pm, rb.And(two, rb.Compare(hlo.NE, pm, k1)), all)
		ck, ck1 := o.col(L, k), o.col(L, k1)
		bk, bk1 := ob.row(B, k), ob.row(B, k1)
		rows := ob.rowsIdx()
		// 1x1: B[i] -= L[i,k] B[k] below k, then B[k] /= D[k,k].
		x := rb.Select(rb.Compare(hlo.GT, o.vIdx(), o.v(k)), ck, rb.Constant(ck.T, 0))
		B1 := rb.Select(ob.m(one), rb.Sub(B, rb.Mul(ob.asCols(x), ob.asRows(bk))), B)
		rk := rb.Mul(bk, rb.BroadcastInDim(rb.Div(rb.Constant(hlo.T(e, batch...), 1), o.elem(ck, k)), bk.T.Shape, o.bdims()))
		B1 = rb.Select(rb.And(ob.m(one), rb.Compare(hlo.EQ, rows, ob.m(k))), ob.asRows(rk), B1)
		// 2x2: two eliminations, then the 2x2 block solve.
		ge2 := rb.Compare(hlo.GE, o.vIdx(), o.v(rb.Add(k, o.scalarS64(2))))
		x0 := rb.Select(ge2, ck, rb.Constant(ck.T, 0))
		x1 := rb.Select(ge2, ck1, rb.Constant(ck.T, 0))
		B2 := rb.Sub(rb.Sub(B, rb.Mul(ob.asCols(x0), ob.asRows(bk))), rb.Mul(ob.asCols(x1), ob.asRows(bk1)))
		akm1k := o.elem(ck, k1)
		akm1 := rb.Div(o.elem(ck, k), akm1k)
		ak := rb.Div(o.elem(ck1, k1), akm1k)
		denom := rb.Sub(rb.Mul(akm1, ak), rb.Constant(akm1.T, 1))
		bw := func(v *hlo.Value) *hlo.Value { return rb.BroadcastInDim(v, bk.T.Shape, o.bdims()) }
		bkm1 := rb.Div(bk, bw(akm1k))
		bkk := rb.Div(bk1, bw(akm1k))
		nk := rb.Div(rb.Sub(rb.Mul(bw(ak), bkm1), bkk), bw(denom))
		nk1 := rb.Div(rb.Sub(rb.Mul(bw(akm1), bkk), bkm1), bw(denom))
		B2 = rb.Select(rb.Compare(hlo.EQ, rows, ob.m(k)), ob.asRows(nk), B2)
		B2 = rb.Select(rb.Compare(hlo.EQ, rows, ob.m(k1)), ob.asRows(nk1), B2)
		B = rb.Select(ob.m(two), B2, B1)
		step := rb.Select(two, o.scalarS64(2), one64)
		k = rb.Select(active, rb.Add(k, step), k)
		return []*hlo.Value{B, L, P, k}
	})
	// L^T X = Y, moving backward.
	bwd := b.For(n, []*hlo.Value{fwd[0], ld, piv64, newLdlOps(b, ld.T.Shape).scalarS64(n - 1)}, func(rb *hlo.Builder, _ *hlo.Value, s []*hlo.Value) []*hlo.Value {
		B, L, P, k := s[0], s[1], s[2], s[3]
		o := newLdlOps(rb, ld.T.Shape)
		ob := newLdlOps(rb, B.T.Shape)
		one64 := o.scalarS64(1)
		active := rb.Compare(hlo.GE, k, o.scalarS64(0))
		kc := rb.Select(active, k, o.scalarS64(0))
		p := o.elem(P, kc)
		one := rb.And(active, rb.Compare(hlo.GT, p, o.scalarS64(0)))
		two := rb.And(active, rb.Compare(hlo.LT, p, o.scalarS64(0)))
		km1 := rb.Sub(kc, one64)
		gt := rb.Compare(hlo.GT, o.vIdx(), o.v(kc))
		// B[k] -= sum_{i>k} L[i,k] B[i] (and for k-1 with a 2x2 block).
		dot := func(c *hlo.Value) *hlo.Value {
			w := rb.Select(gt, c, rb.Constant(c.T, 0))
			return rb.Reduce(rb.Mul(ob.asCols(w), B), rb.Constant(hlo.T(e), 0), hlo.ReduceSum, int64(r-2))
		}
		rows := ob.rowsIdx()
		nk := rb.Sub(ob.row(B, kc), dot(o.col(L, kc)))
		B = rb.Select(rb.And(ob.m(active), rb.Compare(hlo.EQ, rows, ob.m(kc))), ob.asRows(nk), B)
		nkm1 := rb.Sub(ob.row(B, km1), dot(o.col(L, km1)))
		B = rb.Select(rb.And(ob.m(two), rb.Compare(hlo.EQ, rows, ob.m(km1))), ob.asRows(nkm1), B)
		target := rb.Select(one, rb.Sub(p, one64), rb.Sub(rb.Neg(p), one64))
		all := rb.Compare(hlo.EQ, ob.colsIdx(), ob.colsIdx())
		B = ob.swapRows(B, kc, target, rb.And(active, rb.Compare(hlo.NE, target, kc)), all)
		step := rb.Select(two, o.scalarS64(2), one64)
		k = rb.Select(active, rb.Sub(k, step), k)
		return []*hlo.Value{B, L, P, k}
	})
	return bwd[0]
}

// linalgLdlFactorEx is linalg_ldl_factor_ex(self, *, hermitian, check_errors) -> (LD, pivots, info).
func linalgLdlFactorEx(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := luSquareCheck("torch.linalg.ldl_factor_ex", m, "A"); err != nil {
		return nil, err
	}
	if err := luDTypeCheck("torch.linalg.ldl_factor_ex", "ldl_factor_kernel_cpu", false, m); err != nil {
		return nil, err
	}
	if c.Bool(2, false) {
		err := luRaise(c, false, func() *hlo.Value { _, _, info := ldlFactor(c.B, c.T(0)); return info }, func(v int64) string {
			return fmt.Sprintf("torch.linalg.ldl_factor_ex: Unknown error code: %d.", v)
		})
		if err != nil {
			return nil, err
		}
	}
	ld, piv, info := ldlFactor(c.B, c.T(0))
	return []*hlo.Value{ld, piv, info}, nil
}

// linalgLdlSolve is linalg_ldl_solve(LD, pivots, B, *, hermitian).
func linalgLdlSolve(c *Ctx) ([]*hlo.Value, error) {
	lm, pm, bm := c.Meta(0), c.Meta(1), c.Meta(2)
	if err := luSquareCheck("torch.linalg.ldl_solve", lm, "LD"); err != nil {
		return nil, err
	}
	if err := luFloatCheck("torch.linalg.ldl_solve", lm); err != nil {
		return nil, err
	}
	if bm.Rank() < 2 {
		return nil, Errorf("torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, but it has %d dimensions instead", bm.Rank())
	}
	if pm.DType != Int32 {
		return nil, Errorf("torch.linalg.ldl_solve: Expected pivots to be integers. Got %s", scalarTypeName(pm.DType))
	}
	if lm.DType != bm.DType {
		return nil, Errorf("torch.linalg.ldl_solve: LD dtype %s does not match b dtype %s", scalarTypeName(lm.DType), scalarTypeName(bm.DType))
	}
	n := lm.Sizes[lm.Rank()-1]
	if bm.Sizes[bm.Rank()-2] != n {
		return nil, Errorf("torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B (%s and %s)", dimsX(lm.Sizes[lm.Rank()-2:]), dimsX(bm.Sizes[bm.Rank()-2:]))
	}
	batch, err := luBroadcastBatch(lm.Sizes, bm.Sizes)
	if err != nil {
		return nil, err
	}
	ld := luExpandBatch(c.B, c.T(0), batch)
	piv := c.B.BroadcastTo(c.T(1), luWith(batch, n))
	rhs := luExpandBatch(c.B, c.T(2), batch)
	return []*hlo.Value{ldlSolve(c.B, ld, piv, rhs)}, nil
}

func init() {
	def("aten::linalg_ldl_factor_ex", linalgLdlFactorEx).Needs = readsResults
	def("aten::linalg_ldl_solve", linalgLdlSolve)
}
