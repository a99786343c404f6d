package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// qrJacobiSweeps caps the Jacobi sweeps; they stop earlier once converged.
const qrJacobiSweeps = 30

// qrRotation returns the Jacobi rotation (c, s, t) that zeroes apq in the
// symmetric 2x2 block [[app, apq], [apq, aqq]] (all [B]), as in Numerical
// Recipes: theta = (aqq - app) / (2 apq), t = sign(theta) / (|theta| +
// sqrt(theta^2 + 1)). Where rot is false (or apq is 0) it is the identity.
func qrRotation(b *hlo.Builder, app, aqq, apq, rot *hlo.Value) (c, s, t *hlo.Value) {
	sh := app.T.Shape
	e := app.T.Elem
	zero, one, two := qrFill(b, e, sh, 0), qrFill(b, e, sh, 1), qrFill(b, e, sh, 2)
	rot = b.And(rot, b.Compare(hlo.NE, apq, zero))
	theta := b.Div(b.Sub(aqq, app), b.Mul(two, b.Select(rot, apq, one)))
	at := b.Abs(theta)
	// For huge theta, 1 / (2 theta) avoids theta^2 overflowing.
	big := b.Compare(hlo.GT, at, qrFill(b, e, sh, 1/qrEps(e)))
	tt := b.Div(one, b.Add(at, b.Sqrt(b.Add(b.Mul(theta, theta), one))))
	tt = b.Select(big, b.Div(one, b.Mul(two, b.Select(big, at, one))), tt)
	tt = b.Select(b.Compare(hlo.LT, theta, zero), b.Neg(tt), tt)
	t = b.Select(rot, tt, zero)
	c = b.Rsqrt(b.Add(b.Mul(t, t), one))
	s = b.Mul(t, c)
	return c, s, t
}

// qrJacobiEigh diagonalizes the symmetric a [B, n, n] by parallel cyclic
// Jacobi rounds until its off-diagonal part is negligible, returning the
// eigenvalues [B, n] in ascending order and the eigenvectors as columns.
func qrJacobiEigh(b *hlo.Builder, a *hlo.Value) (*hlo.Value, []*hlo.Value) {
	s := a.T.Shape
	nb, n := s[0], s[1]
	e := a.T.Elem
	if a.T.NumElements() == 0 || n < 2 {
		return qrSum(b, a, 2), []*hlo.Value{qrEye(b, e, s)}
	}
	ap, padded := qrPadOdd(b, a, true)
	np := ap.T.Shape[1]
	ps := ap.T.Shape
	eps2 := qrEps(e) * qrEps(e)
	outs := qrJacobiRounds(b, np, []*hlo.Value{ap, qrEye(b, e, ps)}, func(rb *hlo.Builder, c []*hlo.Value) *hlo.Value {
		sq := rb.Mul(c[0], c[0])
		frob := qrSum(rb, sq, 1, 2)
		off := qrSum(rb, qrSelectZero(rb, rb.Not(qrDiagMask(rb, ps)), sq), 1, 2)
		big := rb.Compare(hlo.GT, off, rb.Mul(frob, qrFill(rb, e, []int64{nb}, eps2)))
		return rb.Reduce(big, rb.Scalar(hlo.Pred, 0), hlo.ReduceOr, 0)
	}, func(rb *hlo.Builder, c []*hlo.Value) []*hlo.Value {
		a, v := c[0], c[1]
		diag := qrSum(rb, qrSelectZero(rb, qrDiagMask(rb, ps), a), 2)
		app, aqq := qrPairSplit(rb, diag, 1)
		ae, _ := qrPairSplit(rb, a, 1)
		_, aeo := qrPairSplit(rb, ae, 2)
		apq := qrSum(rb, qrSelectZero(rb, qrDiagMask(rb, aeo.T.Shape), aeo), 2)
		rot := rb.BroadcastTo(rb.Scalar(hlo.Pred, 1), app.T.Shape)
		cs, sn, t := qrRotation(rb, app, aqq, apq, rot)
		a = qrRotatePairs(rb, qrRotatePairs(rb, a, cs, sn, 1), cs, sn, 2)
		// The rotated 2x2 blocks get their exact values.
		nd := qrPairJoin(rb, rb.Sub(app, rb.Mul(t, apq)), rb.Add(aqq, rb.Mul(t, apq)), 1)
		isDiag := qrDiagMask(rb, ps)
		a = rb.Select(isDiag, qrAlong(rb, nd, ps, 1), a)
		two := qrFill(rb, hlo.S64, ps, 2)
		sameBlock := rb.Compare(hlo.EQ, rb.Div(qrIota(rb, ps, 1), two), rb.Div(qrIota(rb, ps, 2), two))
		a = qrSelectZero(rb, rb.Or(isDiag, rb.Not(sameBlock)), a)
		v = qrRotatePairs(rb, v, cs, sn, 2)
		return []*hlo.Value{qrRoundRobin(rb, qrRoundRobin(rb, a, 1), 2), qrRoundRobin(rb, v, 2)}
	})
	a, v := outs[0], outs[1]
	w := qrSum(b, qrSelectZero(b, qrDiagMask(b, ps), a), 2)
	if padded {
		w = qrPadKey(b, w, v, math.Inf(1))
	}
	w, vs := qrSortCols(b, w, false, v)
	if padded {
		w = qrSliceDim(b, w, 1, 0, n)
		vs[0] = qrSliceDim(b, qrSliceDim(b, vs[0], 1, 0, n), 2, 0, n)
	}
	return w, vs
}

// qrDiagMask is true on the main diagonal of shape [B, n, n].
func qrDiagMask(b *hlo.Builder, shape []int64) *hlo.Value {
	return b.Compare(hlo.EQ, qrIota(b, shape, 1), qrIota(b, shape, 2))
}

// qrSortCols sorts the values w [B, n] (ascending, or descending when
// desc) and permutes the columns of each x [B, r, n] the same way.
func qrSortCols(b *hlo.Builder, w *hlo.Value, desc bool, xs ...*hlo.Value) (*hlo.Value, []*hlo.Value) {
	nb, n := w.T.Shape[0], w.T.Shape[1]
	if n <= 1 {
		return w, xs
	}
	dir := hlo.LT
	if desc {
		dir = hlo.GT
	}
	sorted := b.Sort(1, func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value {
		return rb.Compare(dir, a[0], a[1])
	}, w, qrIota(b, []int64{nb, n}, 1))
	// perm[j] is the old column of new column j: P[i, j] = (perm[j] == i).
	ps := []int64{nb, n, n}
	pm := b.Convert(b.Compare(hlo.EQ, qrIota(b, ps, 1), qrAlong(b, sorted[1], ps, 2)), w.T.Elem)
	out := make([]*hlo.Value, len(xs))
	for i, x := range xs {
		out[i] = qrMatmul(b, x, pm)
	}
	return sorted[0], out
}

// linalgEigh is _linalg_eigh(A, UPLO, compute_v): the eigenvalues (ascending)
// and eigenvectors of the symmetric matrix stored in A's UPLO triangle.
func linalgEigh(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	uplo := c.Str(1, "L")
	computeV := c.Bool(2, true)
	if m.Rank() < 2 {
		return nil, Errorf("linalg.eigh: The input tensor A must have at least 2 dimensions.")
	}
	r, n := m.Sizes[m.Rank()-2], m.Sizes[m.Rank()-1]
	if r != n {
		return nil, Errorf("linalg.eigh: A must be batches of square matrices, but they are %d by %d matrices", r, n)
	}
	if uplo != "L" && uplo != "U" && uplo != "l" && uplo != "u" {
		return nil, Errorf("Expected UPLO argument to be 'L' or 'U', but got %s", uplo)
	}
	if err := qrFloatCheck("linalg_eigh_cpu", m); err != nil {
		return nil, err
	}
	b := c.B
	a := qrFlat(b, c.T(0))
	s := a.T.Shape
	keep := qrTriMask(b, s, 0, uplo == "U" || uplo == "u")
	a = b.Select(keep, a, qrTrans(b, a))
	w, vs := qrJacobiEigh(b, a)
	batch := m.Sizes[:m.Rank()-2]
	vec := qrFill(b, a.T.Elem, []int64{0}, 0)
	if computeV {
		vec = qrUnflat(b, vs[0], batch)
	}
	return []*hlo.Value{qrUnflat(b, w, batch), vec}, nil
}

func init() {
	def("aten::_linalg_eigh", linalgEigh, "aten::_linalg_eigh.eigenvalues")
}
