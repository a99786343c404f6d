package dispatch

import (
	"math"
	"strings"

	"torchtpu/hlo"
)

// i0eA are Cephes' Chebyshev coefficients for exp(-x) I0(x) on [0, 8].
var i0eA = []float64{
	-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
	-1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
	-1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
	-1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7, 1.11738753912010371815e-6,
	-4.41673835845875056359e-6, 1.64484480707288970893e-5, -5.75419501008210370398e-5, 1.88502885095841655729e-4,
	-5.76375574538582365885e-4, 1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
	-2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2, 1.71620901522208775349e-1,
	-3.04682672343198398683e-1, 6.76795274409476084995e-1,
}

// i0eB are Cephes' Chebyshev coefficients for exp(-x) sqrt(x) I0(x) on [8, inf).
var i0eB = []float64{
	-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
	-2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
	-9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
	7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
	1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-9, 2.26666899049817806459e-8,
	2.04891858946906374183e-7, 2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
	8.04490411014108831608e-1,
}

// i1eA are Cephes' Chebyshev coefficients for exp(-x) I1(x) / x on [0, 8].
var i1eA = []float64{
	2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16, -1.10559694773538630805e-15,
	7.60068429473540693410e-15, -5.04218550472791168711e-14, 3.22379336594557470981e-13, -1.98397439776494371520e-12,
	1.17361862988909016308e-11, -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
	9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7, -8.56872026469545474066e-7,
	3.47025130813767847674e-6, -1.32731636560394358279e-5, 4.78156510755005422638e-5, -1.61760815825896745588e-4,
	5.12285956168575772895e-4, -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
	2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1, -1.76416518357834055153e-1,
	2.52587186443633654823e-1,
}

// i1eB are Cephes' Chebyshev coefficients for exp(-x) sqrt(x) I1(x) on [8, inf).
var i1eB = []float64{
	7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17, -3.20952592199342395980e-17,
	2.96262899764595013876e-16, 3.30820231092092828324e-16, -1.88035477551078244854e-15, -3.81440307243700780478e-15,
	1.04202769841288027642e-14, 4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
	-7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11, 3.25260358301548823856e-11,
	-1.89749581235054123450e-11, -5.58974346219658380687e-10, -3.83538038596423702205e-9, -2.63146884688951950684e-8,
	-2.51223623787020892529e-7, -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
	7.78576235018280120474e-1,
}

// i1eTables gives the I1 Chebyshev coefficients for x's precision: PyTorch's
// float32 kernels use only the trailing 17 and 7 terms.
func i1eTables(x *hlo.Value) ([]float64, []float64) {
	if x.T.Elem == hlo.F64 {
		return i1eA, i1eB
	}
	return i1eA[len(i1eA)-17:], i1eB[len(i1eB)-7:]
}

// chbevl evaluates a Chebyshev series at x by Clenshaw's recurrence, as Cephes does.
func chbevl(b *hlo.Builder, x *hlo.Value, cs []float64) *hlo.Value {
	b0, b1, b2 := splat(b, x, cs[0]), splat(b, x, 0), splat(b, x, 0)
	for _, c := range cs[1:] {
		b2, b1 = b1, b0
		b0 = b.Add(b.Sub(b.Mul(x, b1), b2), splat(b, x, c))
	}
	return b.Mul(splat(b, x, 0.5), b.Sub(b0, b2))
}

// besselIParts gives, for |x|, the Chebyshev series of exp(-|x|) I_n on [0, 8]
// (divided by |x| for n = 1) and of exp(-|x|) sqrt(|x|) I_n beyond, the
// selector of the near range, and sqrt(|x|).
func besselIParts(b *hlo.Builder, ax *hlo.Value, n int) (near, far, isNear, sq *hlo.Value) {
	k := func(v float64) *hlo.Value { return splat(b, ax, v) }
	ta, tb := i0eA, i0eB
	if n == 1 {
		ta, tb = i1eTables(ax)
	}
	near = chbevl(b, b.Sub(b.Div(ax, k(2)), k(2)), ta)
	far = chbevl(b, b.Sub(b.Div(k(32), ax), k(2)), tb)
	return near, far, b.Compare(hlo.LE, ax, k(8)), b.Sqrt(ax)
}

// withSign gives r the sign of x (for the odd functions I1 and I1e).
func withSign(b *hlo.Builder, x, r *hlo.Value) *hlo.Value {
	return b.Select(b.Compare(hlo.LT, x, splat(b, x, 0)), b.Neg(r), r)
}

// i0eOf is the exponentially scaled modified Bessel function exp(-|x|) I0(x).
func i0eOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	near, far, isNear, sq := besselIParts(b, b.Abs(x), 0)
	return b.Select(isNear, near, b.Div(far, sq))
}

// i0Of is the modified Bessel function I0 (also modified_bessel_i0).
func i0Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	ax := b.Abs(x)
	near, far, isNear, sq := besselIParts(b, ax, 0)
	e := pexp(b, ax)
	return b.Select(isNear, b.Mul(e, near), b.Div(b.Mul(e, far), sq))
}

// i1eOf is exp(-|x|) I1(x).
func i1eOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	ax := b.Abs(x)
	near, far, isNear, sq := besselIParts(b, ax, 1)
	return withSign(b, x, b.Select(isNear, b.Mul(near, ax), b.Div(far, sq)))
}

// i1Of is the modified Bessel function I1.
func i1Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	ax := b.Abs(x)
	near, far, isNear, sq := besselIParts(b, ax, 1)
	e := pexp(b, ax)
	return withSign(b, x, b.Select(isNear, b.Mul(b.Mul(e, ax), near), b.Div(b.Mul(e, far), sq)))
}

// modifiedI1Of is special_modified_bessel_i1: I1 with PyTorch's other
// evaluation order (and always the full coefficient tables).
func modifiedI1Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	ax := b.Abs(x)
	near := chbevl(b, b.Sub(b.Div(ax, k(2)), k(2)), i1eA)
	far := chbevl(b, b.Sub(b.Div(k(32), ax), k(2)), i1eB)
	e := pexp(b, ax)
	r := b.Select(b.Compare(hlo.LE, ax, k(8)), b.Mul(b.Mul(near, ax), e), b.Div(b.Mul(e, far), b.Sqrt(ax)))
	return withSign(b, x, r)
}

// sphericalJ0Of is sin(x)/x with a series below 1/2 and 0 at infinity.
func sphericalJ0Of(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	k := func(v float64) *hlo.Value { return splat(b, x, v) }
	x2 := b.Mul(x, x)
	series := b.Add(k(1), b.Mul(x2, poly(b, x2, 1.0/6227020800, -1.0/39916800, 1.0/362880, -1.0/5040, 1.0/120, -1.0/6)))
	r := b.Select(b.Compare(hlo.LT, b.Abs(x), k(0.5)), series, b.Div(psin(b, x), x))
	return b.Select(b.Compare(hlo.EQ, b.Abs(x), k(math.Inf(1))), k(0), r)
}

// precise applies f to x in float64 for float32 x: the CPU plugin's float32
// exp, log, sin and cos are a few ULP off the C library's, which PyTorch's
// float32 kernels call.
func precise(b *hlo.Builder, x *hlo.Value, f func(*hlo.Value) *hlo.Value) *hlo.Value {
	if x.T.Elem == hlo.F64 {
		return f(x)
	}
	return b.Convert(f(b.Convert(x, hlo.F64)), x.T.Elem)
}

func pexp(b *hlo.Builder, x *hlo.Value) *hlo.Value { return precise(b, x, b.Exp) }
func plog(b *hlo.Builder, x *hlo.Value) *hlo.Value { return precise(b, x, b.Log) }
func psin(b *hlo.Builder, x *hlo.Value) *hlo.Value { return precise(b, x, b.Sin) }
func pcos(b *hlo.Builder, x *hlo.Value) *hlo.Value { return precise(b, x, b.Cos) }

// noHalfOp is a float-promoting unary rule for ops whose CPU kernel rejects
// float16 and bfloat16 (kernel "<name>_cpu"); f runs in the input's
// precision, as the CPU kernel does.
func noHalfOp(name string, f func(b *hlo.Builder, x *hlo.Value) *hlo.Value) Fn {
	kernel := strings.TrimPrefix(name, "special_") + "_cpu"
	rule := unaryOp(floatDType, kernel, false, f)
	return func(c *Ctx) ([]*hlo.Value, error) {
		if d := c.Meta(0).DType; d == Float16 || d == BFloat16 {
			return nil, notImplemented(kernel, d)
		}
		return rule(c)
	}
}

func init() {
	ops := []struct {
		name string
		f    func(b *hlo.Builder, x *hlo.Value) *hlo.Value
	}{{"i0", i0Of}, {"special_i0e", i0eOf}, {"special_i1", i1Of}, {"special_i1e", i1eOf}}
	for _, o := range ops {
		def("aten::"+o.name, unaryOp(floatDType, o.name, false, upcast(o.f)))
	}
	def("aten::special_spherical_bessel_j0", noHalfOp("special_spherical_bessel_j0", sphericalJ0Of))
}
