package dispatch

import (
	"torchtpu/hlo"
)

// cholFactor returns the lower Cholesky factor of the matrices of a (the
// strict upper triangle zeroed) and LAPACK's info: the order of the first
// leading minor that is not positive-definite, or 0.
func cholFactor(b *hlo.Builder, a *hlo.Value) (*hlo.Value, *hlo.Value) {
	batch := luBatch(a.T.Shape)
	if a.T.NumElements() == 0 {
		return a, b.ConstantInt(hlo.T(hlo.S32, batch...), 0)
	}
	l := luTril(b, b.Cholesky(a, true), 0)
	d := luDiag(b, l)
	// A failed step leaves a NaN (or non-positive) diagonal entry.
	bad := b.Not(b.Compare(hlo.GT, d, b.Constant(d.T, 0)))
	return l, luFirstIndex(b, bad)
}

// cholCheckErrors raises PyTorch's error for a nonzero info when asked to.
func cholCheckErrors(c *Ctx, fn string, info *hlo.Value) error {
	vals, err := c.R.Int64Values(info)
	if err != nil {
		return err
	}
	for _, v := range vals {
		if v != 0 {
			return Errorf("%s: The factorization could not be completed because the input is not positive-definite (the leading minor of order %d is not positive-definite).", fn, v)
		}
	}
	return nil
}

// linalgCholeskyEx is linalg_cholesky_ex(self, *, upper, check_errors) -> (L, info).
func linalgCholeskyEx(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := luSquareCheck("linalg.cholesky", m, "A"); err != nil {
		return nil, err
	}
	if err := luFloatCheck("linalg.cholesky", m); err != nil {
		return nil, err
	}
	l, info := cholFactor(c.B, c.T(0))
	if c.Bool(2, false) {
		if err := cholCheckErrors(c, "linalg.cholesky", info); err != nil {
			return nil, err
		}
	}
	if c.Bool(1, false) {
		l = luMT(c.B, l)
	}
	return []*hlo.Value{l, info}, nil
}

// cholFactorArg returns the Cholesky factor argument as a lower factor.
func cholLower(b *hlo.Builder, f *hlo.Value, upper bool) *hlo.Value {
	if upper {
		return luTril(b, luMT(b, f), 0)
	}
	return luTril(b, f, 0)
}

// cholSolve solves (L L^T) x = rhs for the lower factor l.
func cholSolve(b *hlo.Builder, l, rhs *hlo.Value) *hlo.Value {
	y := triSolve(b, l, rhs, true, true, false, false)
	return triSolve(b, l, y, true, true, false, true)
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
	if err := luFloatCheck("cholesky_inverse", m); err != nil {
		return nil, err
	}
	l := cholLower(c.B, c.T(0), c.Bool(1, false))
	// inv(L L^T) = L^-T L^-1 = X^T X with X = L^-1.
	x := triSolve(c.B, l, luEye(c.B, l.T.Elem, l.T.Shape), true, true, false, false)
	return []*hlo.Value{luMatmul(c.B, luMT(c.B, x), x)}, nil
}

func init() {
	def("aten::linalg_cholesky_ex", linalgCholeskyEx, "aten::linalg_cholesky_ex.L")
	def("aten::_cholesky_solve_helper", cholSolveHelper)
	def("aten::cholesky_inverse", choleskyInverse)
}
