package dispatch

import (
	"math"
	"slices"

	"torchtpu/hlo"
)

// randomInts returns int64 values uniform in [from, from+span) of shape, where
// span is taken modulo 2^64 (0 means the full 64-bit range). from and span
// are runtime inputs, so randint with new bounds does not recompile.
func (c *Ctx) randomInts(seedArg int, shape []int64, from int64, span uint64) *hlo.Value {
	b := c.B
	bits := c.randomBits(seedArg, shape, hlo.U64)
	if span != 0 {
		s := b.BroadcastTo(b.BitcastConvert(c.R.IntNumber(int64(span), hlo.S64), hlo.U64), shape)
		bits = b.Rem(bits, s)
	}
	lo := b.BroadcastTo(c.R.IntNumber(from, hlo.S64), shape)
	return b.Add(b.BitcastConvert(bits, hlo.S64), lo)
}

// maxRandom returns the largest value random_ draws for dtype d: the largest
// integer of d, or 2^digits for floats (every integer up to it is exact).
func maxRandom(d DType) int64 {
	if d.IsFloat() {
		return int64(1) << mantissaDigits(d)
	}
	if d == Int64 {
		return math.MaxInt64
	}
	return int64(hlo.Highest(d.Elem()))
}

// randomBoundsCheck is CPU's check that from and to - 1 are values of
// dtype d (0 and 1 for bool), named by the C++ type in its message.
func randomBoundsCheck(d DType, from, to int64) error {
	lo, hi := hlo.Lowest(d.Elem()), hlo.Highest(d.Elem())
	switch {
	case d == Bool:
		lo, hi = 0, 1
	case d.IsFloat():
		hi = maxFinite(d.Elem())
		lo = -hi
	}
	if f := float64(from); f < lo || f > hi {
		return Errorf("from is out of bounds for %s", cppName(d))
	}
	if t := float64(to - 1); t < lo || t > hi {
		return Errorf("to - 1 is out of bounds for %s", cppName(d))
	}
	return nil
}

// randomRange builds random(self, *, generator), random.to(self, to, *,
// generator) and random.from(self, from, to, *, generator): integers in
// [from, to), to defaulting to maxRandom+1, in self's dtype.
func randomRange(hasFrom, hasTo bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if hasTo && m.DType.IsComplex() {
			return nil, Errorf("check_random_bounds handles only integral, floating-point and boolean types")
		}
		var from int64
		seedArg := 1
		arg := 1
		if hasFrom {
			from = c.Int(1, 0)
			arg = 2
			seedArg = 3
		}
		var span uint64
		if hasTo && c.Has(arg) {
			to := c.Int(arg, 0)
			if from >= to {
				return nil, Errorf("random_ expects 'from' to be less than 'to', but got from=%d >= to=%d", from, to)
			}
			if err := randomBoundsCheck(m.DType, from, to); err != nil {
				return nil, err
			}
			span = uint64(to) - uint64(from)
		} else {
			hi := maxRandom(m.DType)
			if from > hi {
				return nil, Errorf("random_ expects 'from' casted to dtype to be less than or equal to 'to' casted to dtype, but got from=%d > to=%d", from, hi)
			}
			span = uint64(hi) - uint64(from) + 1
		}
		if hasTo && !hasFrom {
			seedArg = 2
		}
		r := c.randomInts(seedArg, m.Sizes, from, span)
		return []*hlo.Value{c.B.Convert(r, m.DType.Elem())}, nil
	}
}

// randpermOut is randperm.generator_out(n, *, generator, out): a random
// permutation of 0..n-1, from sorting random 64-bit keys.
func randpermOut(c *Ctx) ([]*hlo.Value, error) {
	n := c.Int(0, 0)
	if n < 0 {
		return nil, Errorf("n must be non-negative, got%d", n)
	}
	d := c.Meta(len(c.Args) - 1).DType
	if d == Bool || d.IsComplex() {
		return nil, notImplemented("randperm", d)
	}
	// CPU's limits: floats up to the last integer their mantissa reaches plus one (bfloat16 unchecked), integer
	// types as n - 1 converts to them.
	limits := map[DType]struct {
		n    int64
		text string
	}{Float16: {2049, "2049"}, Float32: {1<<24 + 1, "2^24+1"}, Float64: {1<<53 + 1, "2^53+1"}}
	if l, ok := limits[d]; ok && n > l.n {
		return nil, Errorf("n cannot be greater than %s for %s type.", l.text, scalarTypeName(d))
	}
	if !d.IsFloat() && d != Int64 && n > 0 && n-1 > int64(hlo.Highest(d.Elem())) {
		return nil, Errorf("value cannot be converted to type %s without overflow", scalarTypeCName(d))
	}
	b := c.B
	if n == 0 {
		return []*hlo.Value{b.ConstantInt(hlo.T(d.Elem(), 0), 0)}, nil
	}
	keys := c.randomBits(1, []int64{n}, hlo.U64)
	idx := b.Iota(hlo.T(hlo.S64, n), 0)
	out := b.Sort(0, func(rb *hlo.Builder, a []*hlo.Value) *hlo.Value { return rb.Compare(hlo.LT, a[0], a[1]) }, keys, idx)
	return []*hlo.Value{b.Convert(out[1], d.Elem())}, nil
}

// nativeDropout is native_dropout(input, p, train) with the seed the shim
// appends: in training, output = input * mask / (1-p) with a boolean mask
// that keeps each element with probability 1-p.
func nativeDropout(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	p := c.Float(1, 0.5)
	b := c.B
	if !c.Bool(2, true) {
		return []*hlo.Value{c.T(0), full(b, Bool, m.Sizes, 1)}, nil
	}
	if err := checkFloat(m.DType, "native_dropout"); err != nil {
		return nil, err
	}
	if !(p >= 0 && p <= 1) {
		return nil, Errorf("dropout probability has to be between 0 and 1, but got %g", p)
	}
	scale := 0.0
	if p < 1 {
		scale = 1 / (1 - p)
	}
	u := c.uniform01(3, m.Sizes, Float64)
	mask := b.Compare(hlo.GE, u, b.BroadcastTo(c.R.Scalar(p, hlo.F64), m.Sizes))
	e := m.DType.Elem()
	out := b.Mul(b.Mul(c.T(0), b.Convert(mask, e)), b.BroadcastTo(c.R.Scalar(scale, e), m.Sizes))
	return []*hlo.Value{out, mask}, nil
}

// nativeDropoutBackward is native_dropout_backward(grad_output, mask, scale).
func nativeDropoutBackward(c *Ctx) ([]*hlo.Value, error) {
	g, mk := c.Meta(0), c.Meta(1)
	if !slices.Equal(g.Sizes, mk.Sizes) {
		return nil, Errorf("mask should be the same shape as grad_output: %v vs %v", mk.Sizes, g.Sizes)
	}
	if mk.DType != Bool && mk.DType != g.DType {
		return nil, Errorf("Mask should be Bool Scalar Type %s", mk.DType)
	}
	b := c.B
	// The float scale promotes integral and bool gradients to the default float dtype, as on CPU.
	e := g.DType.Elem()
	if !g.DType.IsFloat() {
		e = Float32.Elem()
	}
	s := b.BroadcastTo(c.R.Scalar(c.Float(2, 1), e), g.Sizes)
	return []*hlo.Value{b.Mul(b.Mul(b.Convert(c.T(0), e), b.Convert(c.T(1), e)), s)}, nil
}

func init() {
	def("aten::uniform", uniformRule).Needs = randomAt(3)
	r := def("aten::normal_functional", normalRule, "")
	r.Needs = randomAt(3)
	alias("aten::normal_", r, Inplace)
	alias("aten::normal.out", r, OutVariant)
	checked := Needs{Random: true, Results: true} // draws, and reads its std or probabilities back to check them
	def("aten::normal.Tensor_Tensor", normalTensors, "aten::normal.Tensor_Tensor_out").Needs = checked
	def("aten::normal.Tensor_float", normalTensors, "aten::normal.Tensor_float_out").Needs = randomAt(2)
	def("aten::normal.float_Tensor", normalTensors, "aten::normal.float_Tensor_out").Needs = checked
	r = def("aten::bernoulli.p", bernoulliP, "aten::bernoulli.float_out")
	r.Needs = randomAt(2)
	alias("aten::bernoulli_.float", r, Inplace)
	def("aten::bernoulli.Tensor", bernoulliTensor(1, 2), "aten::bernoulli.Tensor_out").Needs = checked
	def("aten::bernoulli", bernoulliTensor(-1, 1)).Needs = checked
	def("aten::exponential", exponentialRule).Needs = randomAt(2)
	def("aten::random", randomRange(false, false)).Needs = randomAt(1)
	def("aten::random.to", randomRange(false, true), "aten::random.to_out").Needs = randomAt(2)
	def("aten::random.from", randomRange(true, true), "aten::random.from_out").Needs = randomAt(3)
	alias("aten::randperm.generator_out", &Rule{Name: "aten::randperm.generator_out", Fn: randpermOut, Needs: randomAt(1)}, OutVariant)
	r = def("aten::native_dropout", nativeDropout, "")
	r.TrailingSeed, r.Needs = true, randomAt(3) // input, p, train, then the seed
	def("aten::native_dropout_backward", nativeDropoutBackward)
}
