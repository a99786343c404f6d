// Backward rules of the float-only activations (activation_float.go) and of
// ELU, leaky ReLU and logit.

package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// numLike is the runtime number v broadcast to x's type.
func numLike(c *Ctx, x *hlo.Value, v float64) *hlo.Value {
	return c.B.BroadcastTo(c.R.Scalar(v, x.T.Elem), x.T.Shape)
}

// eluGrad is elu_backward(grad_output, alpha, scale, input_scale, is_result,
// self_or_result); its tensors are arguments 0 and 5.
func eluGrad(c *Ctx) ([]*hlo.Value, error) {
	if c.Bool(4, false) && c.Float(1, 1) < 0 {
		return nil, Errorf("In-place elu backward calculation is triggered with a negative slope which is not supported. " +
			"This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead.")
	}
	d := c.resultType(0, 5)
	if !d.IsFloat() {
		return nil, notImplemented("elu_backward_cpu", d)
	}
	vs, _, err := c.broadcastArgs(d, 0, 5)
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(d)
	g, x := b.Convert(vs[0], acc), b.Convert(vs[1], acc)
	negcoef := numLike(c, x, c.Float(1, 1)*c.Float(2, 1))
	poscoef := numLike(c, x, c.Float(2, 1))
	negin := numLike(c, x, c.Float(3, 1))
	var neg *hlo.Value
	if c.Bool(4, false) {
		neg = b.Mul(b.Mul(g, negin), b.Add(x, negcoef))
	} else {
		neg = b.Mul(b.Mul(g, b.Mul(negin, negcoef)), b.Exp(b.Mul(x, negin)))
	}
	r := b.Select(b.Compare(hlo.LE, x, splat(b, x, 0)), neg, b.Mul(g, poscoef))
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

// hardtanhGrad is hardtanh_backward(grad_output, self, min_val, max_val).
func hardtanhGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	out := b.Or(b.Compare(hlo.LE, x, numLike(c, x, c.Float(2, -1))), b.Compare(hlo.GE, x, numLike(c, x, c.Float(3, 1))))
	return b.Select(out, splat(b, g, 0), g)
}

// hardswishGrad is 0 below -3, g (x/3 + 1/2) on [-3, 3], g above.
func hardswishGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	mid := b.Mul(g, b.Add(b.Div(x, splat(b, x, 3)), splat(b, x, 0.5)))
	r := b.Select(b.Compare(hlo.LE, x, splat(b, x, 3)), mid, g)
	return b.Select(b.Compare(hlo.LT, x, splat(b, x, -3)), splat(b, x, 0), r)
}

// hardsigmoidGrad is g / 6 strictly inside (-3, 3), 0 elsewhere.
func hardsigmoidGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	in := b.And(b.Compare(hlo.GT, x, splat(b, x, -3)), b.Compare(hlo.LT, x, splat(b, x, 3)))
	return b.Select(in, b.Div(g, splat(b, x, 6)), splat(b, x, 0))
}

// softplusGrad is softplus_backward(grad_output, self, beta, threshold).
func softplusGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	beta, th := numLike(c, x, c.Float(2, 1)), numLike(c, x, c.Float(3, 20))
	bx := b.Mul(x, beta)
	z := b.Exp(bx)
	return b.Select(b.Compare(hlo.GT, bx, th), g, b.Div(b.Mul(g, z), b.Add(z, splat(b, x, 1))))
}

// shrinkGrad is softshrink_backward and hardshrink_backward: 0 on [-l, l].
func shrinkGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	l := numLike(c, x, c.Float(2, 0.5))
	return b.Select(inBand(b, x, b.Neg(l), l), splat(b, x, 0), g)
}

// leakyReluGrad is leaky_relu_backward(grad_output, self, negative_slope, self_is_result).
func leakyReluGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	return b.Select(b.Compare(hlo.GT, x, splat(b, x, 0)), g, b.Mul(g, numLike(c, x, c.Float(2, 0.01))))
}

// logitGrad is logit_backward(grad_output, self, eps): g / (x (1 - x)) inside
// the domain, NaN outside it (0 outside [eps, 1 - eps] with eps).
func logitGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	r := b.Div(g, b.Mul(x, b.Sub(splat(b, x, 1), x)))
	if !c.Has(2) {
		out := b.Or(b.Compare(hlo.LT, x, splat(b, x, 0)), b.Compare(hlo.GT, x, splat(b, x, 1)))
		return b.Select(out, splat(b, x, math.NaN()), r)
	}
	eps := c.Float(2, 0)
	out := b.Or(b.Compare(hlo.LT, x, numLike(c, x, eps)), b.Compare(hlo.GT, x, numLike(c, x, 1-eps)))
	return b.Select(out, splat(b, x, 0), r)
}

// mishGrad is g (tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)), sp = softplus(x).
func mishGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	t := b.Tanh(softplusOf(b, x, splat(b, x, 1), splat(b, x, 20)))
	s := b.Logistic(x)
	return b.Mul(g, b.Add(t, b.Mul(b.Mul(x, s), b.Sub(splat(b, x, 1), b.Mul(t, t)))))
}

// errInPlaceLeakyNegative is CPU's refusal of the backward of an in-place
// leaky_relu_ (or rrelu_ in eval mode) with a negative slope.
func errInPlaceLeakyNegative() error {
	return Errorf("In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. " +
		"This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. " +
		"File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope")
}

// rreluGrad is rrelu_with_noise_backward(grad_output, self, noise, lower,
// upper, training, self_is_result).
func rreluGrad(c *Ctx) ([]*hlo.Value, error) {
	if c.Bool(5, false) && c.Float(4, 1.0/3)-c.Float(3, 1.0/8) > 1e-6 {
		d := c.resultType(0, 2)
		vs, _, err := c.broadcastArgs(d, 0, 2)
		if err != nil {
			return nil, err
		}
		return []*hlo.Value{c.B.Mul(vs[0], vs[1])}, nil
	}
	slope := (c.Float(3, 1.0/8) + c.Float(4, 1.0/3)) / 2
	if c.Bool(6, false) && slope < 0 {
		return nil, errInPlaceLeakyNegative() // CPU runs it as leaky_relu_backward
	}
	return gradRule("rrelu_with_noise_backward", func(c *Ctx, g, x *hlo.Value) *hlo.Value {
		b := c.B
		return b.Select(b.Compare(hlo.GT, x, splat(b, x, 0)), g, b.Mul(g, numLike(c, x, slope)))
	})(c)
}

func init() {
	def("aten::elu_backward", eluGrad, "aten::elu_backward.grad_input")
	def("aten::hardtanh_backward", gradRule("hardtanh_backward_cpu", hardtanhGrad), "aten::hardtanh_backward.grad_input")
	def("aten::hardswish_backward", gradRule("hardswish_backward_cpu", hardswishGrad), "aten::hardswish_backward.out")
	def("aten::hardsigmoid_backward", gradRule("hardsigmoid_backward_cpu", hardsigmoidGrad), "aten::hardsigmoid_backward.grad_input")
	def("aten::softplus_backward", gradRule("softplus_backward_cpu", softplusGrad), "aten::softplus_backward.grad_input")
	def("aten::softshrink_backward", gradRule("softshrink_backward_cpu", shrinkGrad), "aten::softshrink_backward.grad_input")
	def("aten::hardshrink_backward", gradRule("hardshrink_backward_cpu", shrinkGrad), "aten::hardshrink_backward.grad_input")
	leaky := gradRule("leaky_relu_backward_cpu", leakyReluGrad)
	def("aten::leaky_relu_backward", func(c *Ctx) ([]*hlo.Value, error) {
		if c.Bool(3, false) && c.Float(2, 0.01) < 0 {
			return nil, errInPlaceLeakyNegative()
		}
		return leaky(c)
	}, "aten::leaky_relu_backward.grad_input")
	def("aten::logit_backward", gradRule("logit_backward_cpu", logitGrad), "aten::logit_backward.grad_input")
	def("aten::mish_backward", gradRule("mish_backward_cpu", mishGrad))
	def("aten::rrelu_with_noise_backward", rreluGrad, "aten::rrelu_with_noise_backward.out")
}
