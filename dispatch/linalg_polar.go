package dispatch

import (
	"torchtpu/hlo"
)

// linalgMatrixSqrth is linalg_matrix_sqrth(A): the symmetric square root
// V diag(sqrt(max(w, 0))) V^T of the symmetric matrix stored in A's lower
// triangle, from its eigendecomposition A = V diag(w) V^T.
func linalgMatrixSqrth(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if err := luSquareCheck("linalg.matrix_sqrth", m, "A"); err != nil {
		return nil, err
	}
	if err := luDTypeCheck("linalg.matrix_sqrth", "", false, m); err != nil {
		return nil, err
	}
	if m.Sizes[m.Rank()-1] == 0 {
		return []*hlo.Value{c.T(0)}, nil
	}
	b := c.B
	a := qrFlat(b, c.T(0))
	s := a.T.Shape
	a = b.Select(qrTriMask(b, s, 0, false), a, qrTrans(b, a))
	w, vs := qrJacobiEigh(b, a)
	v := vs[0]
	r := b.Sqrt(b.Max(w, qrFill(b, w.T.Elem, w.T.Shape, 0)))
	root := qrMatmul(b, b.Mul(v, qrAlong(b, r, s, 2)), qrTrans(b, v))
	return []*hlo.Value{qrUnflat(b, root, m.Sizes[:m.Rank()-2])}, nil
}

// linalgPolar is linalg_polar(A) for A with at least as many rows as
// columns: U = W Vh and H = V diag(S) Vh from the reduced SVD
// A = W diag(S) Vh, so that A = U H with U's columns orthonormal and H
// symmetric positive semi-definite.
func linalgPolar(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if m.Rank() < 2 {
		return nil, Errorf("linalg.polar: The input tensor A must have at least 2 dimensions.")
	}
	rows, cols := m.Sizes[m.Rank()-2], m.Sizes[m.Rank()-1]
	if rows < cols {
		return nil, Errorf("linalg.polar: input must have at least as many rows as columns, but got %d by %d matrices", rows, cols)
	}
	if err := luDTypeCheck("linalg.polar", "linalg_svd_cpu", false, m); err != nil {
		return nil, err
	}
	b := c.B
	a := qrFlat(b, c.T(0))
	w, sig, vh := qrSVD(b, a, false, true)
	u := qrMatmul(b, w, vh)
	h := qrMatmulTN(b, vh, b.Mul(vh, qrAlong(b, sig, vh.T.Shape, 1)))
	batch := m.Sizes[:m.Rank()-2]
	return []*hlo.Value{qrUnflat(b, u, batch), qrUnflat(b, h, batch)}, nil
}

func init() {
	def("aten::linalg_matrix_sqrth", linalgMatrixSqrth)
	def("aten::linalg_polar", linalgPolar)
}
