package dispatch

import (
	"fmt"

	"torchtpu/hlo"
)

// luResult is a partially pivoted LU factorization of a batch of matrices.
type luResult struct {
	LU     *hlo.Value // (batch..., m, n): L below the diagonal (unit diagonal implied), U on and above
	Pivots *hlo.Value // (batch..., k) int32, 1-based rows swapped with row i at step i
	Perm   *hlo.Value // (batch..., m) int32: row i of L U is row Perm[i] of the input
	Info   *hlo.Value // (batch...) int32: 1-based index of the first zero pivot, or 0
}

// luFactor factors the matrices of a as LAPACK's getrf does: at step k the
// pivot is the first entry of largest magnitude in column k on or below the
// diagonal. It is a loop over k of full-size masked updates.
func luFactor(b *hlo.Builder, a *hlo.Value) luResult {
	shape := a.T.Shape
	r := len(shape)
	m, n := shape[r-2], shape[r-1]
	k := min(m, n)
	batch := luBatch(shape)
	e := a.T.Elem
	bdims := luSeq(r - 2)
	init := []*hlo.Value{
		a,
		b.ConstantInt(hlo.T(hlo.S32, luWith(batch, k)...), 0),
		b.Iota(hlo.T(hlo.S32, luWith(batch, m)...), r-2),
		b.ConstantInt(hlo.T(hlo.S32, batch...), 0),
	}
	if k == 0 || a.T.NumElements() == 0 {
		return luResult{init[0], init[1], init[2], init[3]}
	}
	outs := b.For(k, init, func(rb *hlo.Builder, i *hlo.Value, s []*hlo.Value) []*hlo.Value {
		A, piv, perm, info := s[0], s[1], s[2], s[3]
		zero := rb.ConstantInt(hlo.T(hlo.S64), 0)
		at := func(rowStart, colStart *hlo.Value) []*hlo.Value {
			st := make([]*hlo.Value, r)
			for d := range st {
				st[d] = zero
			}
			st[r-2], st[r-1] = rowStart, colStart
			return st
		}
		vecT := hlo.T(hlo.S64, luWith(batch, m)...)
		rowIdx := rb.Iota(vecT, r-2)
		kVec := rb.BroadcastInDim(i, vecT.Shape, nil)
		// The pivot row: first largest |A[j, k]| with j >= k.
		col := rb.Reshape(rb.DynamicSlice(A, at(zero, i), luWith(batch, m, 1)), luWith(batch, m)...)
		mag := luPivotMagnitude(rb, col)
		cand := rb.Select(rb.Compare(hlo.GE, rowIdx, kVec), mag, rb.Constant(mag.T, -1))
		_, p := rb.ReduceArg(cand, rowIdx, int64(r-2), hlo.GT)
		isK := rb.Compare(hlo.EQ, rowIdx, kVec)
		isP := rb.Compare(hlo.EQ, rowIdx, rb.BroadcastInDim(p, vecT.Shape, bdims))
		// Swap rows k and p of A and of the permutation.
		mat := func(v *hlo.Value) *hlo.Value { return rb.BroadcastInDim(v, shape, luSeq(r-1)) }
		rowOf := func(v *hlo.Value) *hlo.Value { // (batch..., n) -> (batch..., m, n)
			return rb.BroadcastInDim(v, shape, append(luSeq(r-2), int64(r-1)))
		}
		isKM, isPM := mat(isK), mat(isP)
		rowK := rb.Reshape(rb.DynamicSlice(A, at(i, zero), luWith(batch, 1, n)), luWith(batch, n)...)
		rowP := rb.Reduce(rb.Select(isPM, A, rb.Constant(A.T, 0)), rb.Constant(hlo.T(e), 0), hlo.ReduceSum, int64(r-2))
		A = rb.Select(isKM, rowOf(rowP), rb.Select(isPM, rowOf(rowK), A))
		permK := rb.Reshape(rb.DynamicSlice(perm, luStarts(rb, r-2, i), luWith(batch, 1)), batch...)
		permP := rb.Reduce(rb.Select(isP, perm, rb.ConstantInt(perm.T, 0)), rb.ConstantInt(hlo.T(hlo.S32), 0), hlo.ReduceSum, int64(r-2))
		perm = rb.Select(isK, rb.BroadcastInDim(permP, perm.T.Shape, bdims), rb.Select(isP, rb.BroadcastInDim(permK, perm.T.Shape, bdims), perm))
		pOne := rb.Reshape(rb.Add(rb.Convert(p, hlo.S32), rb.ConstantInt(hlo.T(hlo.S32, batch...), 1)), luWith(batch, 1)...)
		piv = rb.DynamicUpdateSlice(piv, pOne, luStarts(rb, r-2, i))
		// A zero pivot (the whole column below is zero) sets info and skips the scaling.
		pivV := rb.Reshape(rb.DynamicSlice(A, at(i, i), luWith(batch, 1, 1)), batch...)
		zeroPiv := rb.Compare(hlo.EQ, pivV, rb.Constant(pivV.T, 0))
		first := rb.And(zeroPiv, rb.Compare(hlo.EQ, info, rb.ConstantInt(info.T, 0)))
		k1 := rb.BroadcastInDim(rb.Add(rb.Convert(i, hlo.S32), rb.ConstantInt(hlo.T(hlo.S32), 1)), batch, nil)
		info = rb.Select(first, k1, info)
		safe := rb.Select(zeroPiv, rb.Constant(pivV.T, 1), pivV)
		col = rb.Reshape(rb.DynamicSlice(A, at(zero, i), luWith(batch, m, 1)), luWith(batch, m)...)
		below := rb.Compare(hlo.GT, rowIdx, kVec)
		// LAPACK scales by the reciprocal of the pivot.
		recip := rb.Div(rb.Constant(safe.T, 1), safe)
		l := rb.Select(below, rb.Mul(col, rb.BroadcastInDim(recip, col.T.Shape, bdims)), rb.Constant(col.T, 0))
		colT := hlo.T(hlo.S64, luWith(batch, n)...)
		right := rb.Compare(hlo.GT, rb.Iota(colT, r-2), rb.BroadcastInDim(i, colT.Shape, nil))
		u := rb.Select(right, rowP, rb.Constant(rowP.T, 0))
		lM := rb.BroadcastInDim(l, shape, luSeq(r-1))
		A = rb.Sub(A, rb.Mul(lM, rowOf(u)))
		colIdx := rb.Iota(hlo.T(hlo.S64, shape...), r-1)
		isCol := rb.Compare(hlo.EQ, colIdx, rb.BroadcastInDim(i, shape, nil))
		A = rb.Select(rb.And(isCol, mat(below)), lM, A)
		return []*hlo.Value{A, piv, perm, info}
	})
	return luResult{outs[0], outs[1], outs[2], outs[3]}
}

// luPivotMagnitude is the magnitude LAPACK's getrf compares when it picks a
// pivot: |x| for real x, |re x| + |im x| for complex x (izamax's measure).
func luPivotMagnitude(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if !x.T.Elem.IsComplex() {
		return b.Abs(x)
	}
	return b.Add(b.Abs(b.Real(x)), b.Abs(b.Imag(x)))
}

// luPermFromPivots applies the row swaps of pivots (batch..., k), 1-based,
// to the identity permutation of m rows: row i of L U is row perm[i] of A.
func luPermFromPivots(b *hlo.Builder, pivots *hlo.Value, m int64) *hlo.Value {
	r := pivots.T.Rank() + 1
	batch := pivots.T.Shape[:r-2]
	k := pivots.T.Shape[r-2]
	perm := b.Iota(hlo.T(hlo.S32, luWith(batch, m)...), r-2)
	if k == 0 || perm.T.NumElements() == 0 {
		return perm
	}
	bdims := luSeq(r - 2)
	outs := b.For(k, []*hlo.Value{perm, pivots}, func(rb *hlo.Builder, i *hlo.Value, s []*hlo.Value) []*hlo.Value {
		perm, pivots := s[0], s[1]
		st := luStarts(rb, r-2, i)
		p := rb.Reshape(rb.DynamicSlice(pivots, st, luWith(batch, 1)), batch...)
		p = rb.Sub(p, rb.ConstantInt(p.T, 1))
		rowIdx := rb.Iota(perm.T, r-2)
		isK := rb.Compare(hlo.EQ, rowIdx, rb.BroadcastInDim(rb.Convert(i, hlo.S32), perm.T.Shape, nil))
		isP := rb.Compare(hlo.EQ, rowIdx, rb.BroadcastInDim(p, perm.T.Shape, bdims))
		permK := rb.Reshape(rb.DynamicSlice(perm, st, luWith(batch, 1)), batch...)
		permP := rb.Reduce(rb.Select(isP, perm, rb.ConstantInt(perm.T, 0)), rb.ConstantInt(hlo.T(hlo.S32), 0), hlo.ReduceSum, int64(r-2))
		perm = rb.Select(isK, rb.BroadcastInDim(permP, perm.T.Shape, bdims), rb.Select(isP, rb.BroadcastInDim(permK, perm.T.Shape, bdims), perm))
		return []*hlo.Value{perm, pivots}
	})
	return outs[0]
}

// luPermMatrix returns P (batch..., m, m) of element e with A = P L U:
// P[r, c] = 1 where perm[c] == r.
func luPermMatrix(b *hlo.Builder, perm *hlo.Value, e hlo.Elem) *hlo.Value {
	r := perm.T.Rank() + 1
	m := perm.T.Shape[r-2]
	shape := luWith(perm.T.Shape[:r-2], m, m)
	rows := b.Iota(hlo.T(hlo.S32, shape...), r-2)
	pc := b.BroadcastInDim(perm, shape, append(luSeq(r-2), int64(r-1)))
	eq := b.Compare(hlo.EQ, rows, pc)
	return b.Select(eq, b.Constant(hlo.T(e, shape...), 1), b.Constant(hlo.T(e, shape...), 0))
}

// luUnpackData splits LU (batch..., m, n) into unit lower L (m, k) and upper U (k, n).
func luUnpackData(b *hlo.Builder, lu *hlo.Value) (*hlo.Value, *hlo.Value) {
	r := lu.T.Rank()
	m, n := lu.T.Shape[r-2], lu.T.Shape[r-1]
	k := min(m, n)
	l := b.Add(luTril(b, lu, -1), luEye(b, lu.T.Elem, lu.T.Shape))
	u := luTriu(b, lu, 0)
	start, lim, str := make([]int64, r), append([]int64{}, lu.T.Shape...), make([]int64, r)
	for d := range str {
		str[d] = 1
	}
	lim[r-1] = k
	l = b.Slice(l, start, lim, str)
	lim[r-1], lim[r-2] = n, k
	u = b.Slice(u, start, lim, str)
	return l, u
}

// linalgLuFactorEx is linalg_lu_factor_ex(A, *, pivot, check_errors) -> (LU, pivots, info).
func linalgLuFactorEx(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() < 2 {
		return nil, Errorf("torch.linalg.lu_factor: Expected tensor with 2 or more dimensions. Got size: %s instead", shapeString(m.Sizes))
	}
	if err := luComplexCheck("linalg.lu_factor", "lu_cpu", true, m); err != nil {
		return nil, err
	}
	if !c.Bool(1, true) {
		return nil, Errorf("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
	}
	if c.Bool(2, false) {
		err := luRaise(c, m.Rank() > 2, func() *hlo.Value { return luFactor(c.B, c.T(0)).Info }, func(v int64) string {
			return fmt.Sprintf("torch.linalg.lu_factor_ex: U[%d,%d] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)", v, v)
		})
		if err != nil {
			return nil, err
		}
	}
	f := luFactor(c.B, c.T(0))
	return []*hlo.Value{f.LU, f.Pivots, f.Info}, nil
}

// luUnpack is lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots) -> (P, L, U).
func luUnpack(c *Ctx) ([]*hlo.Value, error) {
	lm, pm := c.Meta(0), c.Meta(1)
	if lm.Rank() < 2 {
		return nil, Errorf("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: %s instead", shapeString(lm.Sizes))
	}
	if pm.DType != Int32 {
		return nil, Errorf("lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\nNote: this function is intended to be used with the output produced by torch.linalg.lu_factor")
	}
	e := lm.DType.Elem()
	empty := c.B.Constant(hlo.T(e, 0), 0)
	outs := []*hlo.Value{empty, empty, empty}
	if c.Bool(2, true) {
		outs[1], outs[2] = luUnpackData(c.B, c.T(0))
	}
	if c.Bool(3, true) {
		perm := luPermFromPivots(c.B, c.T(1), lm.Sizes[lm.Rank()-2])
		outs[0] = luPermMatrix(c.B, perm, e)
	}
	return outs, nil
}

// linalgLu is linalg_lu(A, *, pivot) -> (P, L, U).
func linalgLu(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() < 2 {
		return nil, Errorf("linalg.lu: Expected tensor with 2 or more dimensions. Got size: %s instead", shapeString(m.Sizes))
	}
	if err := luComplexCheck("linalg.lu", "lu_cpu", true, m); err != nil {
		return nil, err
	}
	if !c.Bool(1, true) {
		return nil, Errorf("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
	}
	f := luFactor(c.B, c.T(0))
	l, u := luUnpackData(c.B, f.LU)
	return []*hlo.Value{luPermMatrix(c.B, f.Perm, m.DType.Elem()), l, u}, nil
}

func init() {
	def("aten::linalg_lu_factor_ex", linalgLuFactorEx).Needs = readsResults
	def("aten::lu_unpack", luUnpack)
	def("aten::linalg_lu", linalgLu)
}
