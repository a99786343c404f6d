package dispatch

import (
	"math"
	"math/big"

	"torchtpu/hlo"
)

// zetaA holds (2k+2)! / B_{2k+2} for k = 0..11, the Euler-Maclaurin
// coefficients of Cephes' zeta.
var zetaA = func() []float64 {
	bern := [][2]int64{{1, 6}, {-1, 30}, {1, 42}, {-1, 30}, {5, 66}, {-691, 2730}, {7, 6},
		{-3617, 510}, {43867, 798}, {-174611, 330}, {854513, 138}, {-236364091, 2730}}
	a := make([]float64, len(bern))
	fact := big.NewInt(1)
	for k, bn := range bern {
		n := int64(2*k + 2)
		fact.Mul(fact, big.NewInt(n-1))
		fact.Mul(fact, big.NewInt(n))
		r := new(big.Rat).SetFrac(new(big.Int).Mul(fact, big.NewInt(bn[1])), big.NewInt(bn[0]))
		a[k], _ = r.Float64()
	}
	return a
}()

// zetaSteps is how many direct-sum terms the lowering unrolls: enough for
// the shifted argument to pass 9 from q >= 9 - zetaSteps.
const zetaSteps = 40

// hurwitzZeta is the Hurwitz zeta function zeta(x, q) as Cephes (and
// PyTorch's CPU kernel) computes it: a direct sum until the argument passes
// 9, then an Euler-Maclaurin tail. It computes in float64.
func hurwitzZeta(b *hlo.Builder, x, q *hlo.Value) *hlo.Value {
	e := x.T.Elem
	x, q = b.Convert(x, hlo.F64), b.Convert(q, hlo.F64)
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	const machep = 1.11022302462515654042e-16
	s := b.Pow(q, b.Neg(x))
	a := q
	bt := k(0)
	done := b.Compare(hlo.NE, x, x) // all false (NaN handled below)
	for i := 0; i < zetaSteps; i++ {
		step := b.And(b.Not(done), b.Or(b.Compare(hlo.LT, k(float64(i)), k(9)), b.Compare(hlo.LE, a, k(9))))
		if i < 9 {
			step = b.Not(done)
		}
		a = b.Select(step, b.Add(a, k(1)), a)
		nb := b.Pow(a, b.Neg(x))
		s = b.Select(step, b.Add(s, nb), s)
		bt = b.Select(step, nb, bt)
		conv := b.Compare(hlo.LT, b.Abs(b.Div(nb, s)), k(machep))
		done = b.Or(done, b.And(step, conv))
	}
	w := a
	tail := b.Sub(b.Div(b.Mul(bt, w), b.Sub(x, k(1))), b.Mul(k(0.5), bt))
	s2 := b.Add(s, tail)
	fa := k(1)
	kk := k(0)
	stop := b.Compare(hlo.NE, x, x)
	for i := 0; i < len(zetaA); i++ {
		fa = b.Mul(fa, b.Add(x, kk))
		bt = b.Div(bt, w)
		t := b.Div(b.Mul(fa, bt), k(zetaA[i]))
		s2 = b.Select(stop, s2, b.Add(s2, t))
		stop = b.Or(stop, b.Compare(hlo.LT, b.Abs(b.Div(t, s2)), k(machep)))
		kk = b.Add(kk, k(1))
		fa = b.Mul(fa, b.Add(x, kk))
		bt = b.Div(bt, w)
		kk = b.Add(kk, k(1))
	}
	r := b.Select(done, s, s2)
	// Domain: x == 1 is a pole, x < 1 undefined; q a non-positive integer is
	// a pole, and q < 0 needs an integer x.
	inf, nan := k(math.Inf(1)), k(math.NaN())
	qInt := b.Compare(hlo.EQ, q, b.Floor(q))
	nonpos := b.Compare(hlo.LE, q, k(0))
	r = b.Select(b.And(nonpos, b.Compare(hlo.NE, x, b.Floor(x))), nan, r)
	r = b.Select(b.And(nonpos, qInt), inf, r)
	r = b.Select(b.Compare(hlo.LT, x, k(1)), nan, r)
	r = b.Select(b.Compare(hlo.EQ, x, k(1)), inf, r)
	return b.Convert(r, e)
}
