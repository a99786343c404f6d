package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// randomBits returns random bits of element type e (hlo.U32 or hlo.U64) and
// the given shape, generated on the device from the 64-bit seed in argument
// seedArg (the shim draws it from the op's generator). The seed is a runtime
// input, so a new seed does not recompile.
func (c *Ctx) randomBits(seedArg int, shape []int64, e hlo.Elem) *hlo.Value {
	b := c.B
	n := numel(shape)
	if n == 0 {
		return b.ConstantInt(hlo.T(e, shape...), 0)
	}
	seed := b.Reshape(c.R.Seed(seedArg, c.Int(seedArg, 0)), 1)
	state := b.BitcastConvert(b.Concatenate(0, seed, b.ConstantInt(hlo.T(hlo.S64, 1), 0)), hlo.U64)
	_, bits := b.RngBitGenerator(state, hlo.T(e, n))
	return b.Reshape(bits, shape...)
}

// computeType is the float type random floats of dtype d are computed in.
func computeType(d DType) hlo.Elem {
	if d == Float64 {
		return hlo.F64
	}
	return hlo.F32
}

// mantissaDigits returns the significand width of float dtype d.
func mantissaDigits(d DType) int {
	switch d {
	case Float64:
		return 53
	case Float16:
		return 11
	case BFloat16:
		return 8
	}
	return 24
}

// uniform01 returns uniform floats in [0, 1) of shape, in computeType(d),
// with as many random bits as d's significand holds, so the value stays
// below 1 after conversion to d.
func (c *Ctx) uniform01(seedArg int, shape []int64, d DType) *hlo.Value {
	b := c.B
	digits := mantissaDigits(d)
	ce := computeType(d)
	be := hlo.U32
	if ce == hlo.F64 {
		be = hlo.U64
	}
	bits := c.randomBits(seedArg, shape, be)
	shift := b.BroadcastTo(b.ConstantInt(hlo.T(be), int64(be.Bits()-digits)), shape)
	f := b.Convert(b.ShiftRightLogical(bits, shift), ce)
	return b.Mul(f, b.BroadcastTo(b.Scalar(ce, math.Ldexp(1, -digits)), shape))
}

// stdNormal returns standard normal floats of shape in computeType(d) by the
// Box-Muller transform.
func (c *Ctx) stdNormal(seedArg int, shape []int64, d DType) *hlo.Value {
	b := c.B
	two := append([]int64{2}, shape...)
	u := c.uniform01(seedArg, two, d)
	ce := u.T.Elem
	lim := func(i int64) []int64 { return append([]int64{i}, shape...) }
	ones := make([]int64, len(two))
	for i := range ones {
		ones[i] = 1
	}
	u1 := b.Reshape(b.Slice(u, make([]int64, len(two)), append([]int64{1}, shape...), ones), shape...)
	start := make([]int64, len(two))
	start[0] = 1
	u2 := b.Reshape(b.Slice(u, start, lim(2), ones), shape...)
	k := func(v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(ce, v), shape) }
	r := b.Sqrt(b.Mul(k(-2), b.Log(b.Sub(k(1), u1))))
	return b.Mul(r, b.Cos(b.Mul(k(2*math.Pi), u2)))
}

func checkFloat(d DType, op string) error {
	if !d.IsFloat() {
		return notImplemented(op, d)
	}
	return nil
}

// uniformRule is uniform(self, from, to, *, generator): self's shape and dtype
// filled from U[from, to).
func uniformRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	from, to := c.Float(1, 0), c.Float(2, 1)
	d, shape := realParts(m)
	if err := checkFloat(d, "check_uniform_bounds"); err != nil {
		return nil, err
	}
	if from > to {
		return nil, Errorf("uniform_ expects to return a [from, to) range, but found from=%s > to=%s", cDouble(from), cDouble(to))
	}
	if to-from > maxFinite(d.Elem()) {
		return nil, Errorf("uniform_ expects to-from <= std::numeric_limits<%s>::max(), but found to=%s and from=%s which result in to-from to exceed the limit", scalarTypeName(d), cDouble(to), cDouble(from))
	}
	b := c.B
	u := c.uniform01(3, shape, d)
	ce := u.T.Elem
	lo := b.BroadcastTo(c.R.Scalar(from, ce), shape)
	width := b.BroadcastTo(c.R.Scalar(to-from, ce), shape)
	return []*hlo.Value{fromRealParts(b, b.Convert(b.Add(lo, b.Mul(u, width)), d.Elem()), m)}, nil
}

// realParts returns the dtype and shape random numbers for a tensor of meta
// m are drawn in: a complex tensor draws its real and imaginary parts as a
// trailing dimension of 2 of its real dtype, as PyTorch draws into
// view_as_real.
func realParts(m TensorMeta) (DType, []int64) {
	if !m.DType.IsComplex() {
		return m.DType, m.Sizes
	}
	return m.DType.ToReal(), append(append([]int64{}, m.Sizes...), 2)
}

// fromRealParts turns x, drawn as realParts(m) says, into m's dtype (a
// complex32 tensor's float16 parts widen to complex64, as rules compute it).
func fromRealParts(b *hlo.Builder, x *hlo.Value, m TensorMeta) *hlo.Value {
	if !m.DType.IsComplex() {
		return x
	}
	r := len(m.Sizes)
	part := func(i int64) *hlo.Value {
		start := make([]int64, r+1)
		start[r] = i
		limit := append(append([]int64{}, m.Sizes...), i+1)
		return b.Convert(b.Reshape(b.Slice(x, start, limit, onesN(r+1)), m.Sizes...), m.DType.Elem().Real())
	}
	return b.Complex(part(0), part(1))
}

// normalRule is normal_functional(self, mean, std, *, generator).
func normalRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	mean, std := c.Float(1, 0), c.Float(2, 1)
	d, shape := realParts(m)
	if err := checkFloat(d, "normal_kernel_cpu"); err != nil {
		return nil, err
	}
	if std < 0 {
		return nil, Errorf("normal expects std >= 0.0, but found std %g", std)
	}
	if m.DType.IsComplex() { // each part gets half the variance
		std /= math.Sqrt2
	}
	b := c.B
	z := c.stdNormal(3, shape, d)
	ce := z.T.Elem
	mu := b.BroadcastTo(c.R.Scalar(mean, ce), shape)
	sd := b.BroadcastTo(c.R.Scalar(std, ce), shape)
	return []*hlo.Value{fromRealParts(b, b.Convert(b.Add(mu, b.Mul(z, sd)), d.Elem()), m)}, nil
}

// normalTensors builds normal.Tensor_Tensor, Tensor_float and float_Tensor:
// mean + std * N(0, 1) broadcast over the tensor arguments.
func normalTensors(c *Ctx) ([]*hlo.Value, error) {
	var d DType = Undefined
	for _, i := range []int{0, 1} {
		if c.IsTensor(i) {
			d = c.Meta(i).DType
		}
	}
	if c.IsTensor(0) && c.IsTensor(1) {
		d = c.resultType(0, 1)
	}
	if err := checkFloat(d, "normal"); err != nil {
		return nil, err
	}
	if !c.IsTensor(1) && c.Float(1, 1) < 0 {
		return nil, Errorf("normal expects std >= 0.0, but found std %g", c.Float(1, 1))
	}
	if c.IsTensor(1) {
		// CPU (and CUDA) read std back: a negative or NaN element is an error, not a mirrored draw.
		sd := c.T(1)
		if err := c.checkAll(c.B, c.B.Compare(hlo.GE, sd, full(c.B, c.Meta(1).DType, c.Meta(1).Sizes, 0)),
			"normal expects all elements of std >= 0.0"); err != nil {
			return nil, err
		}
	}
	ce := computeType(d)
	vs, shape, err := c.broadcastArgs(FromElem(ce), 0, 1)
	if err != nil {
		return nil, err
	}
	z := c.stdNormal(2, shape, d)
	return []*hlo.Value{c.B.Convert(c.B.Add(vs[0], c.B.Mul(z, vs[1])), d.Elem())}, nil
}

// checkAll reads whether every element of the boolean ok holds and returns
// msg as the error when one does not (the rule declares Needs.Results).
func (c *Ctx) checkAll(b *hlo.Builder, ok *hlo.Value, msg string) error {
	if ok.T.NumElements() == 0 {
		return nil
	}
	bad := b.Reduce(b.Not(ok), b.ConstantInt(hlo.T(hlo.Pred), 0), hlo.ReduceOr, seq(ok.T.Rank())...)
	vals, err := c.R.Int64Values(bad)
	if err != nil {
		return err
	}
	if len(vals) == 1 && vals[0] != 0 {
		return Errorf("%s", msg)
	}
	return nil
}

// bernoulliP is bernoulli.p(self, p, *, generator): ones with probability p,
// in self's shape and dtype.
func bernoulliP(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	p := c.Float(1, 0.5)
	if !(p >= 0 && p <= 1) {
		return nil, Errorf("bernoulli_ expects p to be in [0, 1], but got p=%g", p)
	}
	b := c.B
	u := c.uniform01(2, m.Sizes, Float64)
	hit := b.Compare(hlo.LT, u, b.BroadcastTo(c.R.Scalar(p, hlo.F64), m.Sizes))
	return []*hlo.Value{b.Convert(hit, m.DType.Elem())}, nil
}

// bernoulliTensor is bernoulli.Tensor(self, p, *, generator) and, with p
// absent, bernoulli(self, *, generator) that draws with self's probabilities.
func bernoulliTensor(pArg, seedArg int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if pArg < 0 {
			if err := checkFloat(m.DType, "bernoulli_tensor_cpu_p_"); err != nil {
				return nil, err
			}
		}
		src := 0
		if pArg >= 0 {
			src = pArg
			if _, err := BroadcastShapes(m.Sizes, c.Meta(src).Sizes); err != nil {
				return nil, err
			}
		}
		b := c.B
		pm := c.Meta(src)
		if pm.DType.IsFloat() {
			// CPU checks every probability (NaN included) before it draws.
			pv := c.T(src)
			in := b.And(b.Compare(hlo.GE, pv, full(b, pm.DType, pm.Sizes, 0)), b.Compare(hlo.LE, pv, full(b, pm.DType, pm.Sizes, 1)))
			if err := c.checkAll(b, in, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "+
				"message be improved?  If so, please report an enhancement request to PyTorch.)"); err != nil {
				return nil, err
			}
		}
		p := b.BroadcastTo(b.Convert(c.T(src), hlo.F64), m.Sizes)
		u := c.uniform01(seedArg, m.Sizes, Float64)
		return []*hlo.Value{b.Convert(b.Compare(hlo.LT, u, p), m.DType.Elem())}, nil
	}
}

// exponentialRule is exponential(self, lambd, *, generator): -log(1-U)/lambd.
func exponentialRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	lambd := c.Float(1, 1)
	if err := checkFloat(m.DType, "exponential"); err != nil {
		return nil, err
	}
	if !(lambd > 0) {
		return nil, Errorf("exponential_ expects lambda > 0.0, but found lambda=%g", lambd)
	}
	b := c.B
	u := c.uniform01(2, m.Sizes, m.DType)
	ce := u.T.Elem
	one := b.BroadcastTo(b.Scalar(ce, 1), m.Sizes)
	l := b.BroadcastTo(c.R.Scalar(lambd, ce), m.Sizes)
	return []*hlo.Value{b.Convert(b.Div(b.Neg(b.Log(b.Sub(one, u))), l), m.DType.Elem())}, nil
}
