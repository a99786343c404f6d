// Float-only activations: softplus, mish, the hard* and shrink families,
// threshold, PReLU and RReLU.

package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// floatAct builds a float-only activation rule computed in at least float32;
// f gets a helper num that turns a number into a runtime scalar of x's shape.
func floatAct(kernel string, f func(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(v float64) *hlo.Value) *hlo.Value) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.Meta(0).DType
		if !d.IsFloat() {
			return nil, notImplemented(kernel, d)
		}
		b := c.B
		x := b.Convert(c.T(0), accumElem(d))
		num := func(v float64) *hlo.Value { return b.BroadcastTo(c.R.Scalar(v, x.T.Elem), x.T.Shape) }
		return []*hlo.Value{b.Convert(f(c, b, x, num), d.Elem())}, nil
	}
}

// softplusOf is log1p(exp(beta x)) / beta, or x where beta x > threshold.
func softplusOf(b *hlo.Builder, x, beta, th *hlo.Value) *hlo.Value {
	bx := b.Mul(x, beta)
	return b.Select(b.Compare(hlo.GT, bx, th), x, b.Div(b.Log1p(b.Exp(bx)), beta))
}

// hardsigmoidOf is clamp(x + 3, 0, 6) / 6.
func hardsigmoidOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	t := b.Min(b.Max(b.Add(x, splat(b, x, 3)), splat(b, x, 0)), splat(b, x, 6))
	return b.Div(t, splat(b, x, 6))
}

// inBand is lo <= x <= hi.
func inBand(b *hlo.Builder, x, lo, hi *hlo.Value) *hlo.Value {
	return b.And(b.Compare(hlo.GE, x, lo), b.Compare(hlo.LE, x, hi))
}

func softplusRule(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(float64) *hlo.Value) *hlo.Value {
	return softplusOf(b, x, num(c.Float(1, 1)), num(c.Float(2, 20)))
}

func mishRule(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(float64) *hlo.Value) *hlo.Value {
	return b.Mul(x, b.Tanh(softplusOf(b, x, splat(b, x, 1), splat(b, x, 20))))
}

func hardswishRule(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(float64) *hlo.Value) *hlo.Value {
	return b.Mul(x, hardsigmoidOf(b, x))
}

func hardsigmoidRule(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(float64) *hlo.Value) *hlo.Value {
	return hardsigmoidOf(b, x)
}

// softshrinkRule is x - l above l, x + l below -l, 0 between.
func softshrinkRule(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(float64) *hlo.Value) *hlo.Value {
	l := num(c.Float(1, 0.5))
	r := b.Select(b.Compare(hlo.GT, x, l), b.Sub(x, l), b.Select(b.Compare(hlo.LT, x, b.Neg(l)), b.Add(x, l), splat(b, x, 0)))
	return b.Select(b.Compare(hlo.NE, x, x), x, r)
}

// softshrink is softshrink(self, lambd): CPU's kernel checks the dtype, then
// that lambda lies in [0, the dtype's largest value].
func softshrink(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if !d.IsFloat() {
		return nil, notImplemented("softshrink_check", d)
	}
	l := c.Float(1, 0.5)
	hi := math.MaxFloat64
	if _, h, ok := scalarLimits(d); ok {
		hi = h
	}
	if l < 0 || l > hi {
		return nil, Errorf("lambda must be in range [0, %.6g] for input dtype %s, but found %.6g", hi, scalarTypeName(d), l)
	}
	return floatAct("softshrink_cpu", softshrinkRule)(c)
}

// hardshrinkRule is 0 on [-l, l] and x elsewhere.
func hardshrinkRule(c *Ctx, b *hlo.Builder, x *hlo.Value, num func(float64) *hlo.Value) *hlo.Value {
	l := num(c.Float(1, 0.5))
	return b.Select(inBand(b, x, b.Neg(l), l), splat(b, x, 0), x)
}

// thresholdRule is threshold(self, threshold, value): value where x <= threshold.
// As CPU's kernel, value must fit self's dtype, and for integer types so must
// threshold (both are converted to it, exactly past 2**53); floating types
// compare in their own type.
func thresholdRule(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if d == Bool {
		return nil, notImplemented("threshold_cpu", d)
	}
	if err := checkScalarFits(c.Args[2], d); err != nil {
		return nil, err
	}
	b, x := c.B, c.T(0)
	th := b.BroadcastTo(c.R.Scalar(c.Float(1, 0), x.T.Elem), x.T.Shape)
	if d == Float16 || d == BFloat16 {
		// CPU compares in float32 with the threshold in float32.
		th = b.BroadcastTo(c.R.Scalar(c.Float(1, 0), hlo.F32), x.T.Shape)
		v := b.BroadcastTo(c.Value(2, d), x.T.Shape)
		return []*hlo.Value{b.Select(b.Compare(hlo.LE, b.Convert(x, hlo.F32), th), v, x)}, nil
	}
	if !d.IsFloat() {
		if err := checkScalarFits(c.Args[1], d); err != nil {
			return nil, err
		}
		th = b.BroadcastTo(c.Value(1, d), x.T.Shape)
	}
	v := b.BroadcastTo(c.Value(2, d), x.T.Shape)
	return []*hlo.Value{b.Select(b.Compare(hlo.LE, x, th), v, x)}, nil
}

// preluKernel is _prelu_kernel(self, weight): x where positive, weight * x elsewhere.
func preluKernel(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1)
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	b, x, w := c.B, vs[0], vs[1]
	return []*hlo.Value{b.Select(b.Compare(hlo.GT, x, splat(b, x, 0)), x, b.Mul(w, x))}, nil
}

// preluKernelBackward is _prelu_kernel_backward(grad_output, self, weight):
// both gradients in the broadcast shape (autograd sums the weight's down).
func preluKernelBackward(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1, 2)
	vs, _, err := c.broadcastArgs(d, 0, 1, 2)
	if err != nil {
		return nil, err
	}
	b, g, x, w := c.B, vs[0], vs[1], vs[2]
	pos := b.Compare(hlo.GT, x, splat(b, x, 0))
	gx := b.Select(pos, g, b.Mul(w, g))
	gw := b.Select(pos, splat(b, x, 0), b.Mul(x, g))
	return []*hlo.Value{gx, gw}, nil
}

// rreluWithNoise is rrelu_with_noise(self, noise, lower, upper, training,
// generator): leaky_relu with slope (lower + upper) / 2 in evaluation; in
// training a uniform slope per negative element, written to noise.
func rreluWithNoise(c *Ctx) ([]*hlo.Value, error) {
	d := c.Meta(0).DType
	if !d.IsFloat() {
		return nil, notImplemented("rrelu_with_noise_cpu", d)
	}
	lo, hi := c.Float(2, 1.0/8), c.Float(3, 1.0/3)
	b, x := c.B, c.T(0)
	e := x.T.Elem
	neg := b.Compare(hlo.LE, x, splat(b, x, 0))
	if !c.Bool(4, false) {
		slope := b.BroadcastTo(c.R.Scalar((lo+hi)/2, e), x.T.Shape)
		return []*hlo.Value{b.Select(neg, b.Mul(x, slope), x)}, nil
	}
	u := b.Convert(c.uniform01(5, x.T.Shape, d), e)
	r := b.Add(b.BroadcastTo(c.R.Scalar(lo, e), x.T.Shape), b.Mul(u, b.BroadcastTo(c.R.Scalar(hi-lo, e), x.T.Shape)))
	noise := b.Select(neg, r, splat(b, x, 1))
	c.WriteArg(1, 0, b.Convert(noise, c.Meta(1).DType.Elem()))
	return []*hlo.Value{b.Mul(x, noise)}, nil
}

func init() {
	def("aten::softplus", floatAct("softplus_cpu", softplusRule))
	def("aten::mish", floatAct("mish_cpu", mishRule))
	def("aten::hardswish", floatAct("hardswish_cpu", hardswishRule))
	def("aten::hardsigmoid", floatAct("hardsigmoid_cpu", hardsigmoidRule))
	def("aten::softshrink", softshrink)
	def("aten::hardshrink", floatAct("hardshrink_cpu", hardshrinkRule))
	def("aten::threshold", thresholdRule)
	def("aten::_prelu_kernel", preluKernel)
	def("aten::_prelu_kernel_backward", preluKernelBackward)
	def("aten::rrelu_with_noise", rreluWithNoise).Needs = randomAt(5)
}
