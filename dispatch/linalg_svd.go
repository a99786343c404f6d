package dispatch

import (
	"torchtpu/hlo"
)

// qrJacobiSVD orthogonalizes the columns of a [B, m, n] (m >= n) by
// one-sided (Hestenes) Jacobi rotations in parallel rounds, accumulated in
// v [B, n, n], until every pair of columns is orthogonal to working
// precision. It returns the rotated a (columns u_j sigma_j) and v, with an
// extra zero column (and identity row and column in v) when n is odd.
func qrJacobiSVD(b *hlo.Builder, a *hlo.Value) (*hlo.Value, *hlo.Value, bool) {
	s := a.T.Shape
	nb, m, n := s[0], s[1], s[2]
	e := a.T.Elem
	if a.T.NumElements() == 0 || n < 2 {
		return a, qrEye(b, e, []int64{nb, n, n}), false
	}
	ap, padded := qrPadOdd(b, a, false)
	np := ap.T.Shape[2]
	gs := []int64{nb, np, np}
	tol := qrEps(e) * float64(m)
	outs := qrJacobiRounds(b, np, []*hlo.Value{ap, qrEye(b, e, gs)}, func(rb *hlo.Builder, c []*hlo.Value) *hlo.Value {
		g := qrMatmulTN(rb, c[0], c[0])
		d := qrSum(rb, qrSelectZero(rb, qrDiagMask(rb, gs), g), 2)
		dd := rb.Mul(qrAlong(rb, d, gs, 1), qrAlong(rb, d, gs, 2))
		zero := qrFill(rb, e, gs, 0)
		live := rb.And(rb.Not(qrDiagMask(rb, gs)), rb.Compare(hlo.GT, dd, zero))
		ratio := rb.Div(rb.Abs(g), rb.Sqrt(rb.Select(live, dd, qrFill(rb, e, gs, 1))))
		return rb.Compare(hlo.GT, qrMaxAll(rb, qrSelectZero(rb, live, ratio)), rb.Constant(hlo.T(e), tol))
	}, func(rb *hlo.Builder, c []*hlo.Value) []*hlo.Value {
		a, v := c[0], c[1]
		ue, uo := qrPairSplit(rb, a, 2)
		alpha := qrSum(rb, rb.Mul(ue, ue), 1)
		beta := qrSum(rb, rb.Mul(uo, uo), 1)
		gamma := qrSum(rb, rb.Mul(ue, uo), 1)
		rot := rb.BroadcastTo(rb.Scalar(hlo.Pred, 1), alpha.T.Shape)
		cs, sn, _ := qrRotation(rb, alpha, beta, gamma, rot)
		a = qrRotatePairs(rb, a, cs, sn, 2)
		v = qrRotatePairs(rb, v, cs, sn, 2)
		return []*hlo.Value{qrRoundRobin(rb, a, 2), qrRoundRobin(rb, v, 2)}
	})
	return outs[0], outs[1], padded
}

// qrSVDTall is the SVD of a [B, m, n] with m >= n: u [B, m, m or n] (full
// or not), the singular values [B, n] in descending order and v [B, n, n].
// The left vectors are re-orthonormalized (and completed to a basis) by a
// Householder QR of the normalized columns, whose zero columns (those of
// zero singular values) sort last. Without uv only the values are computed.
func qrSVDTall(b *hlo.Builder, a *hlo.Value, full, uv bool) (*hlo.Value, *hlo.Value, *hlo.Value) {
	s := a.T.Shape
	nb, m, n := s[0], s[1], s[2]
	e := a.T.Elem
	a, v, padded := qrJacobiSVD(b, a)
	sig := b.Sqrt(qrSum(b, b.Mul(a, a), 1))
	if padded {
		sig = qrPadKey(b, sig, v, -1)
	}
	sig, xs := qrSortCols(b, sig, true, a, v)
	a, v = xs[0], xs[1]
	if padded {
		sig = qrSliceDim(b, sig, 1, 0, n)
		a = qrSliceDim(b, a, 2, 0, n)
		v = qrSliceDim(b, qrSliceDim(b, v, 1, 0, n), 2, 0, n)
	}
	if !uv {
		return nil, sig, nil
	}
	pos := b.Compare(hlo.GT, sig, qrFill(b, e, sig.T.Shape, 0))
	inv := b.Select(pos, b.Div(qrFill(b, e, sig.T.Shape, 1), b.Select(pos, sig, qrFill(b, e, sig.T.Shape, 1))), qrFill(b, e, sig.T.Shape, 0))
	un := b.Mul(a, qrAlong(b, inv, s, 2))
	p := n
	if full {
		p = m
	}
	qa, tau := qrGeqrf(b, un)
	u := qrReflect(b, qa, tau, qrEye(b, e, []int64{nb, m, p}), true, false)
	// Column j of Q times sign(R_jj) is u_j; columns past n keep their sign.
	diag := qrSum(b, qrSelectZero(b, b.Compare(hlo.EQ, qrIota(b, s, 1), qrIota(b, s, 2)), qa), 1)
	sign := b.Select(b.Compare(hlo.LT, diag, qrFill(b, e, diag.T.Shape, 0)), qrFill(b, e, diag.T.Shape, -1), qrFill(b, e, diag.T.Shape, 1))
	if p > n {
		sign = b.Concatenate(1, sign, qrFill(b, e, []int64{nb, p - n}, 1))
	}
	u = b.Mul(u, qrAlong(b, sign, u.T.Shape, 2))
	return u, sig, v
}

// linalgSVD is _linalg_svd(A, full_matrices, compute_uv, *, driver): U, S
// (descending) and Vh with A = U diag(S) Vh.
func linalgSVD(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	full, computeUV := c.Bool(1, false), c.Bool(2, true)
	if m.Rank() < 2 {
		return nil, Errorf("linalg.svd: input should have at least 2 dimensions, but has %d dimensions instead", m.Rank())
	}
	if c.Has(3) {
		return nil, Errorf("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.")
	}
	if err := qrFloatCheck("linalg_svd_cpu", m); err != nil {
		return nil, err
	}
	b := c.B
	batch := m.Sizes[:m.Rank()-2]
	u, sig, vh := qrSVD(b, qrFlat(b, c.T(0)), full, computeUV)
	if !computeUV {
		empty := qrFill(b, sig.T.Elem, []int64{0}, 0)
		return []*hlo.Value{empty, qrUnflat(b, sig, batch), empty}, nil
	}
	return []*hlo.Value{qrUnflat(b, u, batch), qrUnflat(b, sig, batch), qrUnflat(b, vh, batch)}, nil
}

// qrSVD is the SVD of a [B, m, n]: U, S and Vh (not V), by the tall case
// of a or of its transpose; U and Vh are nil without uv.
func qrSVD(b *hlo.Builder, a *hlo.Value, full, uv bool) (*hlo.Value, *hlo.Value, *hlo.Value) {
	nb, m, n := a.T.Shape[0], a.T.Shape[1], a.T.Shape[2]
	e := a.T.Elem
	if m == 0 || n == 0 || nb == 0 {
		k := min(m, n)
		um, vn := k, k
		if full {
			um, vn = m, n
		}
		return qrEye(b, e, []int64{nb, m, um}), qrFill(b, e, []int64{nb, k}, 0), qrEye(b, e, []int64{nb, vn, n})
	}
	if m >= n {
		u, sig, v := qrSVDTall(b, a, full, uv)
		if !uv {
			return nil, sig, nil
		}
		return u, sig, qrTrans(b, v)
	}
	u, sig, v := qrSVDTall(b, qrTrans(b, a), full, uv)
	if !uv {
		return nil, sig, nil
	}
	return v, sig, qrTrans(b, u)
}

func init() {
	def("aten::_linalg_svd", linalgSVD, "aten::_linalg_svd.U")
}
