package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"torchtpu/dispatch"
)

// The linear algebra and statistics rules run through the engine on the
// plugin, in float64, and are compared against gonum as the host reference.

const tol = 1e-9

func requireMatEqual(t *testing.T, want, got mat.Matrix, what string) {
	t.Helper()
	wr, wc := want.Dims()
	gr, gc := got.Dims()
	require.Equal(t, [2]int{wr, wc}, [2]int{gr, gc}, "%s: shape", what)
	require.True(t, mat.EqualApprox(want, got, tol), "%s:\nwant %v\ngot  %v", what,
		mat.Formatted(want, mat.Squeeze()), mat.Formatted(got, mat.Squeeze()))
}

// testMatrix is a fixed, well-conditioned r×c matrix.
func testMatrix(r, c int, seed float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.Set(i, j, math.Sin(seed+float64(3*i+7*j))+0.1*float64(i-j))
		}
	}
	return m
}

// spd is a symmetric positive definite n×n matrix.
func spd(n int) *mat.SymDense {
	a := testMatrix(n, n, 1)
	var s mat.SymDense
	s.SymOuterK(1, a)
	for i := 0; i < n; i++ {
		s.SetSym(i, i, s.At(i, i)+float64(n))
	}
	return &s
}

// positiveColumns flips the sign of each column of q (and the matching row
// of r, when given) so that the largest entry of the column is positive:
// factors are unique only up to those signs.
func positiveColumns(q *mat.Dense, r *mat.Dense) {
	rows, cols := q.Dims()
	for j := 0; j < cols; j++ {
		big := 0.0
		for i := 0; i < rows; i++ {
			if math.Abs(q.At(i, j)) > math.Abs(big) {
				big = q.At(i, j)
			}
		}
		if big >= 0 {
			continue
		}
		for i := 0; i < rows; i++ {
			q.Set(i, j, -q.At(i, j))
		}
		if r != nil {
			_, rc := r.Dims()
			for k := 0; k < rc; k++ {
				r.Set(j, k, -r.At(j, k))
			}
		}
	}
}

func TestCholeskyMatchesGonum(t *testing.T) {
	d := newDevice(t)
	a := spd(5)
	var ch mat.Cholesky
	require.True(t, ch.Factorize(a), "gonum: not positive definite")
	var want mat.TriDense
	ch.LTo(&want)
	out := d.op("aten::linalg_cholesky_ex", d.put(a))
	requireMatEqual(t, &want, out[0].dense(), "L")
	require.Equal(t, []float64{0}, out[1].vals, "info")
}

// gonumPermutation is the permutation matrix P of gonum's A = P L U, built
// from its row pivots and checked by reconstructing A.
func gonumPermutation(t *testing.T, a *mat.Dense, lu *mat.LU, l, u *mat.TriDense) *mat.Dense {
	n, _ := a.Dims()
	p := mat.NewDense(n, n, nil)
	for i, r := range lu.RowPivots(nil) {
		p.Set(r, i, 1)
	}
	var plu mat.Dense
	plu.Product(p, l, u)
	if !mat.EqualApprox(&plu, a, tol) {
		p = mat.DenseCopyOf(p.T())
		plu.Product(p, l, u)
	}
	require.True(t, mat.EqualApprox(&plu, a, tol), "gonum's P L U does not give A")
	return p
}

func TestLUMatchesGonum(t *testing.T) {
	d := newDevice(t)
	a := testMatrix(5, 5, 2)
	var lu mat.LU
	lu.Factorize(a)
	var l, u mat.TriDense
	lu.LTo(&l)
	lu.UTo(&u)
	p := gonumPermutation(t, a, &lu, &l, &u)
	out := d.op("aten::linalg_lu", d.put(a))
	requireMatEqual(t, p, out[0].dense(), "P")
	requireMatEqual(t, &l, out[1].dense(), "L")
	requireMatEqual(t, &u, out[2].dense(), "U")

	// The packed factorization: pivots are LAPACK's 1-based row swaps.
	packed := d.op("aten::linalg_lu_factor_ex", d.put(a))
	// Reconstruct P from the swaps and check it against gonum's P.
	perm := []int{0, 1, 2, 3, 4}
	for i, s := range packed[1].vals {
		j := int(s) - 1
		require.True(t, j >= i && j < 5, "pivot %d = %v", i, s)
		perm[i], perm[j] = perm[j], perm[i]
	}
	pa := mat.NewDense(5, 5, nil)
	for i, r := range perm {
		pa.Set(r, i, 1)
	}
	requireMatEqual(t, p, pa, "P from pivots")
	require.Equal(t, []float64{0}, packed[2].vals, "info")
}

func TestQRMatchesGonum(t *testing.T) {
	d := newDevice(t)
	a := testMatrix(6, 4, 3)
	var qr mat.QR
	qr.Factorize(a)
	var qFull, rFull mat.Dense
	qr.QTo(&qFull)
	qr.RTo(&rFull)
	wantQ := mat.DenseCopyOf(qFull.Slice(0, 6, 0, 4))
	wantR := mat.DenseCopyOf(rFull.Slice(0, 4, 0, 4))
	positiveColumns(wantQ, wantR)

	out := d.op("aten::linalg_qr", d.put(a), dispatch.Arg{Kind: dispatch.ArgString, Str: "reduced"})
	gotQ, gotR := mat.DenseCopyOf(out[0].dense()), mat.DenseCopyOf(out[1].dense())
	positiveColumns(gotQ, gotR)
	requireMatEqual(t, wantQ, gotQ, "Q")
	requireMatEqual(t, wantR, gotR, "R")
}

func TestEighMatchesGonum(t *testing.T) {
	d := newDevice(t)
	a := spd(5)
	var es mat.EigenSym
	require.True(t, es.Factorize(a, true))
	var wantV mat.Dense
	es.VectorsTo(&wantV)
	positiveColumns(&wantV, nil)

	out := d.op("aten::_linalg_eigh", d.put(a))
	require.InDeltaSlice(t, es.Values(nil), out[0].vals, tol, "eigenvalues (ascending)")
	gotV := mat.DenseCopyOf(out[1].dense())
	positiveColumns(gotV, nil)
	requireMatEqual(t, &wantV, gotV, "eigenvectors")
}

func TestSVDMatchesGonum(t *testing.T) {
	d := newDevice(t)
	a := testMatrix(5, 3, 4)
	var svd mat.SVD
	require.True(t, svd.Factorize(a, mat.SVDThin))
	var wantU, wantV mat.Dense
	svd.UTo(&wantU)
	svd.VTo(&wantV)

	out := d.op("aten::_linalg_svd", d.put(a))
	require.InDeltaSlice(t, svd.Values(nil), out[1].vals, tol, "singular values (descending)")
	gotU := mat.DenseCopyOf(out[0].dense())
	var gotV mat.Dense
	gotV.CloneFrom(out[2].dense().T()) // Vh -> V
	// Singular vectors pair up: fix the sign of each U column and flip V's with it.
	for _, pair := range []struct{ u, v *mat.Dense }{{&wantU, &wantV}, {gotU, &gotV}} {
		vt := mat.DenseCopyOf(pair.v.T())
		positiveColumns(pair.u, vt)
		pair.v.CloneFrom(vt.T())
	}
	requireMatEqual(t, &wantU, gotU, "U")
	requireMatEqual(t, &wantV, &gotV, "V")
}

func TestSolveAndInverseMatchGonum(t *testing.T) {
	d := newDevice(t)
	a := testMatrix(4, 4, 5)
	b := testMatrix(4, 2, 6)
	var want mat.Dense
	require.NoError(t, want.Solve(a, b))
	out := d.op("aten::_linalg_solve_ex", d.put(a), d.put(b))
	requireMatEqual(t, &want, out[0].dense(), "solve(A, B)")

	var inv mat.Dense
	require.NoError(t, inv.Inverse(a))
	requireMatEqual(t, &inv, d.op("aten::linalg_inv_ex", d.put(a))[0].dense(), "inv(A)")

	// A triangular solve against gonum's.
	lower := mat.NewTriDense(4, mat.Lower, nil)
	for i := 0; i < 4; i++ {
		for j := 0; j <= i; j++ {
			lower.SetTri(i, j, a.At(i, j))
		}
		lower.SetTri(i, i, 2+float64(i)) // a well-conditioned diagonal
	}
	var tri mat.Dense
	require.NoError(t, tri.Solve(lower, b))
	low := mat.DenseCopyOf(lower)
	got := d.op("aten::linalg_solve_triangular", d.put(low), d.put(b),
		dispatch.Arg{Kind: dispatch.ArgBool, Int: 0}) // upper=False
	requireMatEqual(t, &tri, got[0].dense(), "solve_triangular(L, B)")
}

func TestVectorNormsMatchGonum(t *testing.T) {
	d := newDevice(t)
	x := []float64{3, -4, 1.5, -0.25, 2, 7, -1, 0.5}
	cases := []struct {
		ord  float64
		want float64
	}{
		{2, floats.Norm(x, 2)},
		{1, floats.Norm(x, 1)},
		{3, floats.Norm(x, 3)},
		{math.Inf(1), floats.Norm(x, math.Inf(1))},
		{0, float64(len(x))}, // the count of nonzeros
	}
	for _, c := range cases {
		out := d.op("aten::linalg_vector_norm", d.putData(x, int64(len(x))),
			dispatch.Arg{Kind: dispatch.ArgScalarDouble, Double: c.ord})
		require.InDelta(t, c.want, out[0].vals[0], tol, "ord %v", c.ord)
	}
	// Per-row 2-norms of a matrix.
	a := testMatrix(3, 4, 7)
	out := d.op("aten::linalg_vector_norm", d.put(a), dispatch.Arg{Kind: dispatch.ArgScalarDouble, Double: 2},
		dispatch.Arg{Kind: dispatch.ArgIntList, Ints: []int64{1}})
	for i := 0; i < 3; i++ {
		require.InDelta(t, floats.Norm(a.RawRowView(i), 2), out[0].vals[i], tol, "row %d", i)
	}
}

func TestMomentsMatchGonum(t *testing.T) {
	d := newDevice(t)
	a := testMatrix(3, 7, 8)
	rows := func(f func([]float64) float64) []float64 {
		out := make([]float64, 3)
		for i := range out {
			out[i] = f(a.RawRowView(i))
		}
		return out
	}
	dim1 := dispatch.Arg{Kind: dispatch.ArgIntList, Ints: []int64{1}}
	cases := []struct {
		name string
		op   string
		args []dispatch.Arg
		want []float64
	}{
		{"mean", "aten::mean.dim", []dispatch.Arg{dim1}, rows(func(x []float64) float64 { return stat.Mean(x, nil) })},
		{"unbiased var", "aten::var.correction", []dispatch.Arg{dim1, {Kind: dispatch.ArgScalarInt, Int: 1}},
			rows(func(x []float64) float64 { return stat.Variance(x, nil) })},
		{"population var", "aten::var.correction", []dispatch.Arg{dim1, {Kind: dispatch.ArgScalarInt, Int: 0}},
			rows(func(x []float64) float64 { return stat.PopVariance(x, nil) })},
		{"unbiased std", "aten::std.correction", []dispatch.Arg{dim1, {Kind: dispatch.ArgScalarInt, Int: 1}},
			rows(func(x []float64) float64 { return stat.StdDev(x, nil) })},
	}
	for _, c := range cases {
		out := d.op(c.op, append([]dispatch.Arg{d.put(a)}, c.args...)...)
		require.InDeltaSlice(t, c.want, out[0].vals, tol, c.name)
	}
	// var_mean returns both moments at once.
	out := d.op("aten::var_mean.correction", d.put(a), dim1, dispatch.Arg{Kind: dispatch.ArgScalarInt, Int: 1})
	require.InDeltaSlice(t, rows(func(x []float64) float64 { return stat.Variance(x, nil) }), out[0].vals, tol, "var_mean: var")
	require.InDeltaSlice(t, rows(func(x []float64) float64 { return stat.Mean(x, nil) }), out[1].vals, tol, "var_mean: mean")
}
