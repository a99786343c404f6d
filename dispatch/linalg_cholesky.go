package dispatch

import (
	"fmt"

	"torchtpu/hlo"
)

// cholFactor returns the lower Cholesky factor of the matrices of a and
// LAPACK's info: the order of the first leading minor that is not
// positive-definite, or 0. It is potf2's left-looking loop over columns, so
// a failed factorization leaves what LAPACK leaves: the finished columns,
// the failing diagonal entry unsquared, and the rest of a's lower triangle.
func cholFactor(b *hlo.Builder, a *hlo.Value) (*hlo.Value, *hlo.Value) {
	shape := a.T.Shape
	r := len(shape)
	n := shape[r-1]
	batch := luBatch(shape)
	info := b.ConstantInt(hlo.T(hlo.S32, batch...), 0)
	if a.T.NumElements() == 0 {
		return a, info
	}
	bdims := luSeq(r - 2)
	outs := b.For(n, []*hlo.Value{a, luTril(b, a, 0), info}, func(rb *hlo.Builder, j *hlo.Value, s []*hlo.Value) []*hlo.Value {
		A, L, info := s[0], s[1], s[2]
		zero := rb.ConstantInt(hlo.T(hlo.S64), 0)
		it := hlo.T(hlo.S64, shape...)
		jM := rb.BroadcastInDim(j, shape, nil)
		rows, cols := rb.Iota(it, r-2), rb.Iota(it, r-1)
		done := rb.Compare(hlo.NE, info, rb.ConstantInt(info.T, 0))
		// Columns before j of L, and row j of them.
		lj := rb.Select(rb.Compare(hlo.LT, cols, jM), L, rb.Constant(L.T, 0))
		rowJ := rb.DynamicSlice(lj, luStarts(rb, r-2, j, zero), luWith(batch, 1, n))
		colA := rb.DynamicSlice(A, luStarts(rb, r-2, zero, j), luWith(batch, n, 1))
		col := rb.Sub(colA, luMatmul(rb, lj, luMT(rb, rowJ))) // (batch..., n, 1)
		ajj := rb.Reshape(rb.DynamicSlice(col, luStarts(rb, r-2, j, zero), luWith(batch, 1, 1)), batch...)
		ok := rb.Compare(hlo.GT, ajj, rb.Constant(ajj.T, 0))
		fail := rb.And(rb.Not(ok), rb.Not(done))
		j1 := rb.BroadcastInDim(rb.Add(rb.Convert(j, hlo.S32), rb.ConstantInt(hlo.T(hlo.S32), 1)), batch, nil)
		info = rb.Select(fail, j1, info)
		d := rb.Select(ok, rb.Sqrt(ajj), ajj)
		dM := rb.BroadcastInDim(d, shape, bdims)
		colM := rb.BroadcastInDim(rb.Reshape(col, luWith(batch, n)...), shape, luSeq(r-1))
		inCol := rb.Compare(hlo.EQ, cols, jM)
		isDiag := rb.And(inCol, rb.Compare(hlo.EQ, rows, jM))
		below := rb.And(inCol, rb.Compare(hlo.GT, rows, jM))
		live := rb.BroadcastInDim(rb.Not(done), shape, bdims)
		okM := rb.BroadcastInDim(ok, shape, bdims)
		L = rb.Select(rb.And(live, isDiag), dM, L)
		L = rb.Select(rb.And(rb.And(live, okM), below), rb.Div(colM, dM), L)
		return []*hlo.Value{A, L, info}
	})
	return outs[1], outs[2]
}

// linalgCholeskyEx is linalg_cholesky_ex(self, *, upper, check_errors) -> (L, info).
func linalgCholeskyEx(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := luSquareCheck("linalg.cholesky", m, "A"); err != nil {
		return nil, err
	}
	if err := luDTypeCheck("linalg.cholesky", "cholesky_cpu", false, m); err != nil {
		return nil, err
	}
	if c.Bool(2, false) {
		err := luRaise(c, m.Rank() > 2, func() *hlo.Value { _, info := cholFactor(c.B, c.T(0)); return info }, func(v int64) string {
			return fmt.Sprintf("linalg.cholesky_ex: The factorization could not be completed because the input is not positive-definite (the leading minor of order %d is not positive-definite).", v)
		})
		if err != nil {
			return nil, err
		}
	}
	l, info := cholFactor(c.B, c.T(0))
	if c.Bool(1, false) {
		l = luMT(c.B, l)
	}
	return []*hlo.Value{l, info}, nil
}

// cholLower returns a Cholesky factor argument (upper: U with A = U^H U) as
// the lower factor L = U^H, its other triangle zeroed.
func cholLower(b *hlo.Builder, f *hlo.Value, upper bool) *hlo.Value {
	if upper {
		return luTril(b, luMH(b, f), 0)
	}
	return luTril(b, f, 0)
}

// cholSolve solves (L L^H) x = rhs for the lower factor l (L^H x = y is
// solved as the transpose of conj(L)).
func cholSolve(b *hlo.Builder, l, rhs *hlo.Value) *hlo.Value {
	y := triSolve(b, l, rhs, true, true, false, false)
	return triSolve(b, luConj(b, l), y, true, true, false, true)
}

// cholSolveHelper is _cholesky_solve_helper(self, A, upper): it solves
// A A^H X = self (or A^H A X = self when upper) for the factor A.
func cholSolveHelper(c *Ctx) ([]*hlo.Value, error) {
	f, rhs, err := triOperands(c, "cholesky_solve", 1, 0, true)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{cholSolve(c.B, cholLower(c.B, f, c.Bool(2, false)), rhs)}, nil
}

// choleskyInverse is cholesky_inverse(self, upper): the inverse of L L^T
// (or U^T U) computed from the factor.
func choleskyInverse(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() < 2 {
		return nil, Errorf("cholesky_inverse: The input tensor input must have at least 2 dimensions.")
	}
	if err := luSquareCheck("cholesky_inverse", m, "input"); err != nil {
		return nil, err
	}
	if err := luComplexCheck("cholesky_inverse", "cholesky_inverse_out_cpu", true, m); err != nil {
		return nil, err
	}
	l := cholLower(c.B, c.T(0), c.Bool(1, false))
	// inv(L L^H) = L^-H L^-1 = X^H X with X = L^-1.
	x := triSolve(c.B, l, luEye(c.B, l.T.Elem, l.T.Shape), true, true, false, false)
	return []*hlo.Value{luMatmul(c.B, luMH(c.B, x), x)}, nil
}

func init() {
	def("aten::linalg_cholesky_ex", linalgCholeskyEx, "aten::linalg_cholesky_ex.L").Needs = readsResults
	def("aten::_cholesky_solve_helper", cholSolveHelper)
	def("aten::cholesky_inverse", choleskyInverse)
}
