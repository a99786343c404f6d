package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// Cephes' rational approximations of the Bessel functions J0 and Y0, as PyTorch uses them.
var (
	j0PP = []float64{7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
		5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00, 9.99999999999999997821e-01}
	j0PQ = []float64{9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
		5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00, 1.00000000000000000218e+00}
	j0QP = []float64{-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
		-9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
		-5.14105326766599330220e+01, -6.05014350600728481186e+00}
	j0QQ = []float64{6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
		7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03, 2.42005740240291393179e+02}
	j0RP = []float64{-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
		9.70862251047306323952e+15}
	j0RQ = []float64{4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
		1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
		3.18121955943204943306e+16, 1.71086294081043136091e+18}
	j1PP = []float64{7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
		5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00, 1.00000000000000000254e+00}
	j1PQ = []float64{5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
		5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00, 9.99999999999999997461e-01}
	j1QP = []float64{5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
		3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
		2.11688757100572135698e+02, 2.52070205858023719784e+01}
	j1QQ = []float64{7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
		9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03, 3.36093607810698293419e+02}
	j1RP = []float64{-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
		3.68295732863852883286e+15}
	j1RQ = []float64{6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
		2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
		8.95222336184627338078e+16, 5.32278620332680085395e+18}
	y0YP = []float64{1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
		-9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
		4.42733268572569800351e+16, -1.84950800436986690637e+16}
	y0YQ = []float64{1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
		8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15, 2.50596256172653059228e+17}
	y1YP = []float64{1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
		-8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17}
	y1YQ = []float64{5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
		1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
		6.87141087355300489866e+16, 3.97270608116560655612e+18}
)

const (
	quarterPi      = 0.785398163397448309615660845819875721
	threeQuarterPi = 2.356194490192344928846982537459627163
	twoOverPi      = 0.636619772367581343075535053490057448
)

// besselAsym is the large-argument form of J_n / Y_n:
// (p cos(x - phase) - (5/x) q sin(x - phase)) sqrt(2/pi) / sqrt(x); y selects
// the Y form (p sin(x - phase) + (5/x) q cos(x - phase)).
func besselAsym(b *hlo.Builder, x *hlo.Value, pp, pq, qp, qq []float64, phase float64, y bool) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	// J0 and Y0 expand in 25/x^2, J1 and Y1 in (5/x)^2, rounding differently.
	z := b.Div(k(25), b.Mul(x, x))
	if phase == threeQuarterPi {
		z = b.Mul(b.Div(k(5), x), b.Div(k(5), x))
	}
	p := b.Div(poly(b, z, pp...), poly(b, z, pq...))
	q := b.Mul(b.Div(k(5), x), b.Div(poly(b, z, qp...), poly(b, z, qq...)))
	xn := b.Sub(x, k(phase))
	var r *hlo.Value
	if y {
		r = b.Add(b.Mul(p, psin(b, xn)), b.Mul(q, pcos(b, xn)))
	} else {
		r = b.Sub(b.Mul(p, pcos(b, xn)), b.Mul(q, psin(b, xn)))
	}
	return b.Div(b.Mul(r, k(0.797884560802865355879892119868763737)), b.Sqrt(x))
}

// besselJ0Of is the Bessel function of the first kind of order 0.
func besselJ0Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	x = b.Abs(x)
	x2 := b.Mul(x, x)
	near := b.Div(b.Mul(b.Mul(b.Sub(x2, k(5.78318596294678452118e+00)), b.Sub(x2, k(3.04712623436620863991e+01))),
		poly(b, x2, j0RP...)), poly(b, x2, j0RQ...))
	near = b.Select(b.Compare(hlo.LT, x, k(1e-5)), b.Sub(k(1), b.Div(x2, k(4))), near)
	far := besselAsym(b, x, j0PP, j0PQ, j0QP, j0QQ, quarterPi, false)
	return b.Select(b.Compare(hlo.LE, x, k(5)), near, far)
}

// besselJ1Of is the Bessel function of the first kind of order 1 (odd in x).
func besselJ1Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	ax := b.Abs(x)
	x2 := b.Mul(ax, ax)
	near := b.Mul(b.Mul(b.Mul(b.Div(poly(b, x2, j1RP...), poly(b, x2, j1RQ...)), ax),
		b.Sub(x2, k(1.46819706421238932572e+01))), b.Sub(x2, k(4.92184563216946036703e+01)))
	far := besselAsym(b, ax, j1PP, j1PQ, j1QP, j1QQ, threeQuarterPi, false)
	return withSign(b, x, b.Select(b.Compare(hlo.LE, ax, k(5)), near, far))
}

// besselYSmall gives -inf at zero and NaN below it for Y0 and Y1 on (0, 5].
func besselYSmall(b *hlo.Builder, x, r *hlo.Value) *hlo.Value {
	r = b.Select(b.Compare(hlo.LT, x, splat(b, x, 0)), splat(b, x, math.NaN()), r)
	return b.Select(b.Compare(hlo.EQ, x, splat(b, x, 0)), splat(b, x, math.Inf(-1)), r)
}

// besselY0Of is the Bessel function of the second kind of order 0.
func besselY0Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	x2 := b.Mul(x, x)
	near := b.Add(b.Div(poly(b, x2, y0YP...), poly(b, x2, y0YQ...)),
		b.Mul(b.Mul(k(twoOverPi), plog(b, x)), besselJ0Of(b, x)))
	far := besselAsym(b, x, j0PP, j0PQ, j0QP, j0QQ, quarterPi, true)
	return b.Select(b.Compare(hlo.LE, x, k(5)), besselYSmall(b, x, near), far)
}

// besselY1Of is the Bessel function of the second kind of order 1.
func besselY1Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	x2 := b.Mul(x, x)
	near := b.Add(b.Mul(x, b.Div(poly(b, x2, y1YP...), poly(b, x2, y1YQ...))),
		b.Mul(k(twoOverPi), b.Sub(b.Mul(besselJ1Of(b, x), plog(b, x)), b.Div(k(1), x))))
	far := besselAsym(b, x, j1PP, j1PQ, j1QP, j1QQ, threeQuarterPi, true)
	return b.Select(b.Compare(hlo.LE, x, k(5)), besselYSmall(b, x, near), far)
}

func init() {
	for name, f := range map[string]func(b *hlo.Builder, x *hlo.Value) *hlo.Value{
		"special_bessel_j0": besselJ0Of, "special_bessel_j1": besselJ1Of,
		"special_bessel_y0": besselY0Of, "special_bessel_y1": besselY1Of,
	} {
		def("aten::"+name, noHalfOp(name, f))
	}
}
