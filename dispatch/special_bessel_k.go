package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// Cephes' Chebyshev coefficients for K0 and K1 on [0, 2] (A) and [2, inf) (B).
var (
	k0A = []float64{1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
		1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
		1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01, -5.35327393233902768720e-01}
	k0B = []float64{5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
		-1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
		6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
		-2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
		1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
		-1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
		2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
		-1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02, 2.44030308206595545468e+00}
	k1A = []float64{-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
		-1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
		-1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
		-3.53155960776544875667e-01, 1.52530022733894777053e+00}
	k1B = []float64{-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
		1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
		-7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
		3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
		-2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
		2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
		-3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
		1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01, 2.72062619048444266945e+00}
)

// besselK computes K0 (order 0) or K1 (order 1) of x >= 0, scaled by exp(x)
// when scaled: below 2 a Chebyshev series plus a log(x/2) I_n term, above 2
// a series in 8/x; infinity at zero and NaN for negative x.
func besselK(b *hlo.Builder, x *hlo.Value, order int, scaled bool) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	a, bb := k0A, k0B
	if order == 1 {
		a, bb = k1A, k1B
	}
	ser := chbevl(b, b.Sub(b.Mul(x, x), k(2)), a)
	lg := plog(b, b.Mul(k(0.5), x))
	var near *hlo.Value
	switch {
	case order == 0 && !scaled:
		// PyTorch's K0 takes log(0.5 * x) with a double 0.5, so float32
		// finishes this branch in float64.
		f64 := func(v *hlo.Value) *hlo.Value { return b.Convert(v, hlo.F64) }
		x64 := f64(x)
		lg64 := b.Log(b.Mul(splat(b, x64, 0.5), x64))
		near = b.Convert(b.Sub(f64(ser), b.Mul(lg64, f64(i0Of(b, x)))), x.T.Elem)
	case order == 0:
		near = b.Sub(ser, b.Mul(lg, i0Of(b, x)))
	default:
		near = b.Add(b.Mul(lg, modifiedI1Of(b, x)), b.Div(ser, x))
	}
	far := chbevl(b, b.Sub(b.Div(k(8), x), k(2)), bb)
	if scaled {
		near = b.Mul(near, pexp(b, x))
	} else {
		far = b.Mul(pexp(b, b.Neg(x)), far)
	}
	far = b.Div(far, b.Sqrt(x))
	r := b.Select(b.Compare(hlo.LE, x, k(2)), near, far)
	r = b.Select(b.Compare(hlo.LT, x, k(0)), k(math.NaN()), r)
	return b.Select(b.Compare(hlo.EQ, x, k(0)), k(math.Inf(1)), r)
}

func init() {
	ops := map[string]func(b *hlo.Builder, x *hlo.Value) *hlo.Value{
		"special_modified_bessel_i0":        i0Of,
		"special_modified_bessel_i1":        modifiedI1Of,
		"special_modified_bessel_k0":        func(b *hlo.Builder, x *hlo.Value) *hlo.Value { return besselK(b, x, 0, false) },
		"special_modified_bessel_k1":        func(b *hlo.Builder, x *hlo.Value) *hlo.Value { return besselK(b, x, 1, false) },
		"special_scaled_modified_bessel_k0": func(b *hlo.Builder, x *hlo.Value) *hlo.Value { return besselK(b, x, 0, true) },
		"special_scaled_modified_bessel_k1": func(b *hlo.Builder, x *hlo.Value) *hlo.Value { return besselK(b, x, 1, true) },
	}
	for name, f := range ops {
		def("aten::"+name, noHalfOp(name, f))
	}
}
