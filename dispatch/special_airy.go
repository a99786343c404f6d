package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// Cephes' rational approximations of the Airy function Ai.
var (
	airyAN = []float64{3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
		1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
		1.40264691163389668864e+01, 9.99999999999999995305e-01}
	airyAD = []float64{5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
		1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
		1.40959135607834029598e+01, 1.00000000000000000470e+00}
	airyAFN = []float64{-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
		-2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
		-1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08}
	airyAFD = []float64{1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
		9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
		4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07}
	airyAGN = []float64{1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
		9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
		5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
		8.11789239554389293311e-08, 3.41551784765923618484e-10}
	airyAGD = []float64{9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
		5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
		4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
		4.91834570062930015649e-09}
)

// airyAiOf is the Airy function Ai: an oscillating asymptotic form below
// -2.09, a decaying one from 2.09, and the Maclaurin series between (summed
// to a fixed number of terms, past where PyTorch's loop stops converging).
func airyAiOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	invSqrtPi := k(5.64189583547756286948e-01)

	// x < -2.09.
	nx := b.Max(b.Neg(x), k(2.09))
	zr := b.Div(k(1.5), b.Mul(nx, b.Sqrt(nx))) // 1 / (2/3 (-x)^1.5)
	zz := b.Mul(zr, zr)
	t := b.Add(b.Div(k(1), zr), k(0.25*math.Pi))
	fa := b.Add(k(1), b.Div(b.Mul(zz, poly(b, zz, airyAFN...)), poly(b, zz, airyAFD...)))
	ga := b.Div(b.Mul(zr, poly(b, zz, airyAGN...)), poly(b, zz, airyAGD...))
	neg := b.Mul(b.Div(invSqrtPi, b.Sqrt(b.Sqrt(nx))), b.Sub(b.Mul(psin(b, t), fa), b.Mul(pcos(b, t), ga)))

	// x >= 2.09.
	px := b.Max(x, k(2.09))
	zeta := b.Div(b.Mul(k(2), b.Mul(px, b.Sqrt(px))), k(3))
	iz := b.Div(k(1), zeta)
	pos := b.Div(b.Mul(invSqrtPi, b.Div(poly(b, iz, airyAN...), poly(b, iz, airyAD...))),
		b.Mul(b.Mul(k(2), b.Sqrt(b.Sqrt(px))), pexp(b, zeta)))

	// |x| < 2.09.
	z := b.Mul(b.Mul(x, x), x)
	f, g, m, n := k(1), x, k(1), x
	kk := 1.0
	for i := 0; i < 14; i++ {
		m = b.Div(b.Mul(m, z), k((kk+1)*(kk+2)))
		n = b.Div(b.Mul(n, z), k((kk+2)*(kk+3)))
		kk += 3
		f, g = b.Add(f, m), b.Add(g, n)
	}
	mid := b.Sub(b.Mul(k(0.355028053887817239260), f), b.Mul(k(0.258819403792806798405), g))
	r := b.Select(b.Compare(hlo.LT, x, k(-2.09)), neg, b.Select(b.Compare(hlo.GE, x, k(2.09)), pos, mid))
	r = b.Select(b.Compare(hlo.GT, x, k(103.892)), k(0), r)
	return b.Select(b.Compare(hlo.EQ, b.Abs(x), k(math.Inf(1))), k(math.NaN()), r)
}

func init() {
	def("aten::special_airy_ai", noHalfOp("special_airy_ai", airyAiOf))
}
