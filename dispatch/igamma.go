package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// igamConsts are the precision-dependent constants of PyTorch's incomplete
// gamma kernels: the series tolerance, the exp underflow bound and the
// continued fraction's rescaling threshold.
type igamConsts struct{ machep, maxlog, big, biginv float64 }

func igamConstsFor(e hlo.Elem) igamConsts {
	if e == hlo.F64 {
		return igamConsts{1.11022302462515654042e-16, 7.09782712893383996843e2, 4.503599627370496e15,
			2.22044604925031308085e-16}
	}
	return igamConsts{5.9604644775390625e-8, 88.72283905206835, 16777216, 5.9604644775390625e-8}
}

// The Lanczos sum (g = 6.0246...) scaled by exp(g), as Boost and SciPy tabulate it.
var (
	lanczosNum = []float64{0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
		19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
		6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
		601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
		14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
		86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
		56906521.91347156388090791033559122686859}
	lanczosDen = []float64{1, 66, 1925, 32670, 357423, 2637558, 13339535, 45995730, 105258076, 150917976,
		120543840, 39916800, 0}
)

const lanczosG = 6.024680040776729583740234375

// reversedCoeffs lists coefficients in the opposite order.
func reversedCoeffs(xs []float64) []float64 {
	r := make([]float64, len(xs))
	for i, v := range xs {
		r[len(xs)-1-i] = v
	}
	return r
}

// lanczosSum is the scaled Lanczos sum at x > 0, evaluated in 1/x above 1
// so that large x does not overflow.
func lanczosSum(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	inv := b.Div(splat(b, x, 1), x)
	near := b.Div(poly(b, x, lanczosNum...), poly(b, x, lanczosDen...))
	far := b.Div(poly(b, inv, reversedCoeffs(lanczosNum)...), poly(b, inv, reversedCoeffs(lanczosDen)...))
	return b.Select(b.Compare(hlo.GT, b.Abs(x), splat(b, x, 1)), far, near)
}

// igamFac is x^a exp(-x) / Gamma(a), computed to avoid overflow.
func igamFac(b *hlo.Builder, a, x *hlo.Value, k igamConsts) *hlo.Value {
	c := func(v float64) *hlo.Value { return splat(b, x, v) }
	far := b.Compare(hlo.GT, b.Abs(b.Sub(a, x)), b.Mul(c(0.4), b.Abs(a)))
	ax := b.Sub(b.Sub(b.Mul(a, b.Log(x)), x), b.Chlo("lgamma", a))
	farV := b.Select(b.Compare(hlo.LT, ax, c(-k.maxlog)), c(0), b.Exp(ax))
	fac := b.Add(a, c(lanczosG-0.5))
	res := b.Div(b.Sqrt(b.Div(fac, c(math.E))), lanczosSum(b, a))
	small := b.And(b.Compare(hlo.LT, a, c(200)), b.Compare(hlo.LT, x, c(200)))
	r1 := b.Mul(res, b.Mul(b.Exp(b.Sub(a, x)), b.Pow(b.Div(x, fac), a)))
	numfac := b.Div(b.Add(b.Sub(b.Sub(x, a), c(lanczosG)), c(0.5)), fac)
	r2 := b.Mul(res, b.Exp(b.Add(b.Mul(a, b.Sub(b.Log1p(numfac), numfac)),
		b.Div(b.Mul(x, c(0.5-lanczosG)), fac))))
	return b.Select(far, farV, b.Select(small, r1, r2))
}

// igamConverge runs body, at most maxIter times, on the rank-1 carried values
// of the elements not yet done (done marks them at the start); body returns
// the next values and where the element stops after this step. The loop ends
// early once every element is done.
func igamConverge(b *hlo.Builder, maxIter int64, done *hlo.Value, vals []*hlo.Value,
	body func(rb *hlo.Builder, i *hlo.Value, vals []*hlo.Value) ([]*hlo.Value, *hlo.Value)) []*hlo.Value {
	s64 := func(bb *hlo.Builder, v int64) *hlo.Value { return bb.ConstantInt(hlo.T(hlo.S64), v) }
	anyLeft := func(bb *hlo.Builder, d *hlo.Value) *hlo.Value {
		return bb.Reduce(bb.Not(d), bb.Constant(hlo.T(hlo.Pred), 0), hlo.ReduceOr, 0)
	}
	init := append([]*hlo.Value{s64(b, 0), anyLeft(b, done), done}, vals...)
	out := b.While(init, func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value {
		return rb.And(rb.Compare(hlo.LT, a[0], s64(rb, maxIter)), a[1])
	}, func(rb *hlo.Builder, a []*hlo.Value) []*hlo.Value {
		d := a[2]
		next, stop := body(rb, a[0], a[3:])
		res := []*hlo.Value{rb.Add(a[0], s64(rb, 1)), nil, rb.Or(d, stop)}
		res[1] = anyLeft(rb, res[2])
		for i, v := range next {
			res = append(res, rb.Select(d, a[3+i], v))
		}
		return res
	})
	return out[3:]
}

// igamSeries is the lower regularized incomplete gamma by its power series
// (DLMF 8.11.4), for the elements where use holds; ax is igamFac(a, x).
func igamSeries(b *hlo.Builder, a, x, ax, use *hlo.Value, k igamConsts) *hlo.Value {
	one := splat(b, x, 1)
	out := igamConverge(b, 2000, b.Not(use), []*hlo.Value{a, x, a, one, one},
		func(rb *hlo.Builder, _ *hlo.Value, v []*hlo.Value) ([]*hlo.Value, *hlo.Value) {
			r := rb.Add(v[2], splat(rb, v[2], 1))
			c := rb.Mul(v[3], rb.Div(v[1], r))
			ans := rb.Add(v[4], c)
			return []*hlo.Value{v[0], v[1], r, c, ans}, rb.Compare(hlo.LE, c, rb.Mul(splat(rb, c, k.machep), ans))
		})
	return b.Select(b.Compare(hlo.EQ, ax, splat(b, x, 0)), splat(b, x, 0), b.Div(b.Mul(out[4], ax), a))
}

// igamcSeries is the upper regularized incomplete gamma by DLMF 8.7.3, which
// avoids the cancellation of 1 - igamSeries for small x.
func igamcSeries(b *hlo.Builder, a, x, use *hlo.Value, k igamConsts) *hlo.Value {
	zero, one := splat(b, x, 0), splat(b, x, 1)
	out := igamConverge(b, 1999, b.Not(use), []*hlo.Value{a, x, one, zero},
		func(rb *hlo.Builder, i *hlo.Value, v []*hlo.Value) ([]*hlo.Value, *hlo.Value) {
			n := rb.BroadcastTo(rb.Convert(rb.Add(i, rb.ConstantInt(hlo.T(hlo.S64), 1)), hlo.F64), v[0].T.Shape)
			fac := rb.Mul(v[2], rb.Div(rb.Neg(v[1]), n))
			term := rb.Div(fac, rb.Add(v[0], n))
			sum := rb.Add(v[3], term)
			stop := rb.Compare(hlo.LE, rb.Abs(term), rb.Mul(splat(rb, sum, k.machep), rb.Abs(sum)))
			return []*hlo.Value{v[0], v[1], fac, sum}, stop
		})
	logx := b.Log(x)
	t := b.Neg(b.Expm1(b.Sub(b.Mul(a, logx), b.Chlo("lgamma", b.Add(one, a)))))
	return b.Sub(t, b.Mul(b.Exp(b.Sub(b.Mul(a, logx), b.Chlo("lgamma", a))), out[3]))
}

// igamcFraction is the upper regularized incomplete gamma by its continued
// fraction (DLMF 8.9.2), for large x.
func igamcFraction(b *hlo.Builder, a, x, ax, use *hlo.Value, k igamConsts) *hlo.Value {
	c := func(v float64) *hlo.Value { return splat(b, x, v) }
	y := b.Sub(c(1), a)
	z := b.Add(b.Add(x, y), c(1))
	pkm1, qkm1 := b.Add(x, c(1)), b.Mul(z, x)
	// Carried: c, y, z, pkm2, pkm1, qkm2, qkm1, ans.
	out := igamConverge(b, 2000, b.Not(use), []*hlo.Value{c(0), y, z, c(1), pkm1, x, qkm1, b.Div(pkm1, qkm1)},
		func(rb *hlo.Builder, _ *hlo.Value, v []*hlo.Value) ([]*hlo.Value, *hlo.Value) {
			k1 := func(f float64) *hlo.Value { return splat(rb, v[0], f) }
			cc, yy, zz := rb.Add(v[0], k1(1)), rb.Add(v[1], k1(1)), rb.Add(v[2], k1(2))
			yc := rb.Mul(yy, cc)
			pk := rb.Sub(rb.Mul(v[4], zz), rb.Mul(v[3], yc))
			qk := rb.Sub(rb.Mul(v[6], zz), rb.Mul(v[5], yc))
			nz := rb.Compare(hlo.NE, qk, k1(0))
			r := rb.Div(pk, qk)
			t := rb.Select(nz, rb.Abs(rb.Div(rb.Sub(v[7], r), r)), k1(1))
			ans := rb.Select(nz, r, v[7])
			pkm2, pkm1, qkm2, qkm1 := v[4], pk, v[6], qk
			big := rb.Compare(hlo.GT, rb.Abs(pk), k1(k.big))
			scale := func(u *hlo.Value) *hlo.Value { return rb.Select(big, rb.Mul(u, k1(k.biginv)), u) }
			return []*hlo.Value{cc, yy, zz, scale(pkm2), scale(pkm1), scale(qkm2), scale(qkm1), ans},
				rb.Compare(hlo.LE, t, k1(k.machep))
		})
	return b.Select(b.Compare(hlo.EQ, ax, c(0)), c(0), b.Mul(out[7], ax))
}

// igamAsymptotic is the uniform asymptotic expansion for large a near x
// (DLMF 8.12.3 for the lower function, 8.12.4 for the upper).
func igamAsymptotic(b *hlo.Builder, a, x *hlo.Value, lower bool, k igamConsts) *hlo.Value {
	c := func(v float64) *hlo.Value { return splat(b, x, v) }
	sgn := 1.0
	if lower {
		sgn = -1
	}
	lambda := b.Div(x, a)
	sigma := b.Div(b.Sub(x, a), a)
	e0 := b.Sqrt(b.Mul(c(-2), b.Sub(b.Log1p(sigma), sigma)))
	eta := b.Select(b.Compare(hlo.GT, lambda, c(1)), e0,
		b.Select(b.Compare(hlo.LT, lambda, c(1)), b.Neg(e0), c(0)))
	res := b.Mul(c(0.5), b.Chlo("erfc", b.Mul(b.Mul(c(sgn), eta), b.Sqrt(b.Div(a, c(2))))))
	// ck[., k] = sum_n d[k][n] eta^n for every k at once: eta's powers times the table.
	n := x.T.Shape[0]
	pows := make([]*hlo.Value, 25)
	pw := c(1)
	for i := range pows {
		pows[i] = b.Reshape(pw, n, 1)
		pw = b.Mul(pw, eta)
	}
	flat := make([]float64, 0, 625)
	for i := range igamAsymD {
		flat = append(flat, igamAsymD[i][:]...)
	}
	ck := b.DotGeneral(b.Concatenate(1, pows...), b.DenseF64(flat, 25, 25), nil, nil, []int64{1}, []int64{1})
	sum, afac, absold := c(0), c(1), c(math.Inf(1))
	stopped := b.Compare(hlo.NE, c(0), c(0))
	for i := int64(0); i < 25; i++ {
		term := b.Mul(b.Reshape(b.Slice(ck, []int64{0, i}, []int64{n, i + 1}, []int64{1, 1}), n), afac)
		absterm := b.Abs(term)
		stopped = b.Or(stopped, b.Compare(hlo.GT, absterm, absold))
		sum = b.Select(stopped, sum, b.Add(sum, term))
		stopped = b.Or(stopped, b.Compare(hlo.LT, absterm, b.Mul(c(k.machep), b.Abs(sum))))
		absold = absterm
		afac = b.Div(afac, a)
	}
	scale := b.Div(b.Exp(b.Mul(b.Mul(c(-0.5), a), b.Mul(eta, eta))), b.Sqrt(b.Mul(c(2*float64(float32(math.Pi))), a)))
	return b.Add(res, b.Mul(c(sgn), b.Mul(scale, sum)))
}

// incompleteGamma is the regularized lower (or upper) incomplete gamma
// function of rank-1 float64 a and x, branch for branch as PyTorch's
// calc_igamma and calc_igammac choose, with the boundary values they give.
// k holds the input precision's tolerances.
func incompleteGamma(b *hlo.Builder, a, x *hlo.Value, upper bool, k igamConsts) *hlo.Value {
	c := func(v float64) *hlo.Value { return splat(b, x, v) }
	cmp := func(dir string, u, v *hlo.Value) *hlo.Value { return b.Compare(dir, u, v) }
	nan := c(math.NaN())
	isInf := func(v *hlo.Value) *hlo.Value { return cmp(hlo.EQ, b.Abs(v), c(math.Inf(1))) }
	bad := b.Or(cmp(hlo.NE, a, a), cmp(hlo.NE, x, x))
	edge := b.Or(b.Or(cmp(hlo.LE, a, c(0)), cmp(hlo.LE, x, c(0))), b.Or(isInf(a), isInf(x)))
	absxma := b.Div(b.Abs(b.Sub(x, a)), a)
	asym := b.Or(b.And(b.And(cmp(hlo.GT, a, c(20)), cmp(hlo.LT, a, c(200))), cmp(hlo.LT, absxma, c(0.3))),
		b.And(cmp(hlo.GT, a, c(200)), cmp(hlo.LT, absxma, b.Div(c(4.5), b.Sqrt(a)))))
	valid := b.And(b.Not(b.Or(bad, edge)), b.Not(asym))
	// The upper function's branches: 1 - series, the continued fraction or its own series.
	complement := valid
	if !upper {
		complement = b.And(valid, b.And(cmp(hlo.GT, x, c(1)), cmp(hlo.GT, x, a)))
	}
	viaLower := b.Select(cmp(hlo.GT, x, c(1.1)), cmp(hlo.LT, x, a),
		b.Select(cmp(hlo.LE, x, c(0.5)), cmp(hlo.LT, b.Div(c(-0.4), b.Log(x)), a), cmp(hlo.LT, b.Mul(x, c(1.1)), a)))
	useFrac := b.And(complement, b.And(cmp(hlo.GT, x, c(1.1)), b.Not(viaLower)))
	useCSeries := b.And(complement, b.And(cmp(hlo.LE, x, c(1.1)), b.Not(viaLower)))
	useSeries := b.Or(b.And(complement, viaLower), b.And(valid, b.Not(complement)))
	// Where no branch applies the loops see harmless inputs.
	safe := func(v *hlo.Value) *hlo.Value { return b.Select(valid, v, c(1)) }
	sa, sx := safe(a), safe(x)
	ax := igamFac(b, sa, sx, k)
	series := igamSeries(b, sa, sx, ax, useSeries, k)
	gc := b.Select(viaLower, b.Sub(c(1), series),
		b.Select(cmp(hlo.GT, x, c(1.1)), igamcFraction(b, sa, sx, ax, useFrac, k), igamcSeries(b, sa, sx, useCSeries, k)))
	var r *hlo.Value
	lo, hi := c(0), c(1)
	if upper {
		r = b.Select(asym, igamAsymptotic(b, a, x, false, k), gc)
		lo, hi = hi, lo
	} else {
		r = b.Select(asym, igamAsymptotic(b, a, x, true, k), b.Select(complement, b.Sub(c(1), gc), series))
	}
	// Boundaries, lowest precedence first: NaN, x infinite, a infinite,
	// x == 0, a == 0, negative (so igamma(nan, 0) is 0, as on CPU).
	r = b.Select(bad, nan, r)
	r = b.Select(isInf(x), hi, r)
	r = b.Select(isInf(a), b.Select(isInf(x), nan, lo), r)
	r = b.Select(cmp(hlo.EQ, x, c(0)), lo, r)
	r = b.Select(cmp(hlo.EQ, a, c(0)), b.Select(cmp(hlo.GT, x, c(0)), hi, nan), r)
	return b.Select(b.Or(cmp(hlo.LT, x, c(0)), cmp(hlo.LT, a, c(0))), nan, r)
}

// igammaOp is a binary op body for igamma (lower) or igammac (upper): it
// computes in float64 on flattened values with the input precision's
// tolerances, as CPU's float kernels (and its float32 kernels for half).
func igammaOp(upper bool) func(b *hlo.Builder, a, x *hlo.Value) *hlo.Value {
	return func(b *hlo.Builder, a, x *hlo.Value) *hlo.Value {
		e, shape := a.T.Elem, a.T.Shape
		n := a.T.NumElements()
		fa, fx := b.Reshape(b.Convert(a, hlo.F64), n), b.Reshape(b.Convert(x, hlo.F64), n)
		r := incompleteGamma(b, fa, fx, upper, igamConstsFor(e))
		return b.Convert(b.Reshape(r, shape...), e)
	}
}

func init() {
	def("aten::igamma", floatArith(igammaOp(false)), "aten::igamma.out")
	def("aten::igammac", floatArith(igammaOp(true)), "aten::igammac.out")
}
