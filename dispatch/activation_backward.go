package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// gradRule builds a rule for an elementwise backward op (grad_output, x, ...):
// both tensors are promoted to their result type and broadcast, and f gets
// them in at least float32 for half-precision inputs.
func gradRule(kernel string, f func(c *Ctx, g, x *hlo.Value) *hlo.Value) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		d := c.resultType(0, 1)
		if !d.IsFloat() {
			return nil, notImplemented(kernel, d)
		}
		vs, _, err := c.broadcastArgs(d, 0, 1)
		if err != nil {
			return nil, err
		}
		acc := accumElem(d)
		r := f(c, c.B.Convert(vs[0], acc), c.B.Convert(vs[1], acc))
		return []*hlo.Value{c.B.Convert(r, d.Elem())}, nil
	}
}

// thresholdBackward is threshold_backward(grad_output, self, threshold):
// the gradient passes where self > threshold.
func thresholdBackward(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1)
	if d == Bool {
		return nil, notImplemented("threshold_backward", d)
	}
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	b, g, x := c.B, vs[0], vs[1]
	th := b.BroadcastTo(c.Value(2, d), x.T.Shape)
	return []*hlo.Value{b.Select(b.Compare(hlo.LE, x, th), splat(b, g, 0), g)}, nil
}

// geluBackward is gelu_backward(grad_output, self, approximate).
func geluBackward(c *Ctx) ([]*hlo.Value, error) {
	mode := c.Str(2, "none")
	if mode != "none" && mode != "tanh" {
		return nil, Errorf("approximate argument must be either none or tanh.")
	}
	return gradRule("GeluBackwardKernelImpl", func(c *Ctx, g, x *hlo.Value) *hlo.Value {
		b := c.B
		k := func(v float64) *hlo.Value { return splat(b, x, v) }
		if mode == "tanh" {
			beta, kappa := math.Sqrt(2/math.Pi), 0.044715
			x2 := b.Mul(x, x)
			inner := b.Mul(k(beta), b.Add(x, b.Mul(k(kappa), b.Mul(x2, x))))
			t := b.Tanh(inner)
			left := b.Mul(k(0.5), x)
			right := b.Add(k(1), t)
			dLeft := b.Mul(k(0.5), right)
			dRight := b.Mul(b.Sub(k(1), b.Mul(t, t)), b.Mul(k(beta), b.Add(k(1), b.Mul(k(3*kappa), x2))))
			return b.Mul(g, b.Add(dLeft, b.Mul(left, dRight)))
		}
		cdf := b.Mul(k(0.5), b.Add(k(1), erfOf(b, b.Mul(x, k(1/math.Sqrt2)))))
		pdf := b.Mul(k(1/math.Sqrt(2*math.Pi)), b.Exp(b.Mul(k(-0.5), b.Mul(x, x))))
		return b.Mul(g, b.Add(cdf, b.Mul(x, pdf)))
	})(c)
}

// siluGrad is silu_backward: g * s * (1 + x * (1 - s)) with s = sigmoid(x).
func siluGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	b := c.B
	s := b.Logistic(x)
	one := splat(b, x, 1)
	return b.Mul(g, b.Mul(s, b.Add(one, b.Mul(x, b.Sub(one, s)))))
}

// sigmoidGrad is sigmoid_backward(grad_output, output): g * (1 - y) * y.
func sigmoidGrad(c *Ctx, g, y *hlo.Value) *hlo.Value {
	b := c.B
	return b.Mul(g, b.Mul(b.Sub(splat(b, y, 1), y), y))
}

// tanhGrad is tanh_backward(grad_output, output): g * (1 - y^2).
func tanhGrad(c *Ctx, g, y *hlo.Value) *hlo.Value {
	b := c.B
	return b.Mul(g, b.Sub(splat(b, y, 1), b.Mul(y, y)))
}

// logSigmoidOf is min(x, 0) - log1p(exp(-|x|)), stable for large |x|.
func logSigmoidOf(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	zero := splat(b, x, 0)
	return b.Sub(b.Min(x, zero), b.Log1p(b.Exp(b.Neg(b.Abs(x)))))
}

// logSigmoidForward is log_sigmoid_forward(self) -> (output, buffer); the
// buffer is empty: the backward recomputes from self.
func logSigmoidForward(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() {
		return nil, notImplemented("log_sigmoid_cpu", m.DType)
	}
	b := c.B
	y := upcast(logSigmoidOf)(b, c.T(0))
	return []*hlo.Value{y, full(b, m.DType, []int64{0}, 0)}, nil
}

// logSigmoidGrad is log_sigmoid_backward(grad_output, self, buffer): g * sigmoid(-x).
func logSigmoidGrad(c *Ctx, g, x *hlo.Value) *hlo.Value {
	return c.B.Mul(g, c.B.Logistic(c.B.Neg(x)))
}

func init() {
	def("aten::threshold_backward", thresholdBackward, "aten::threshold_backward.grad_input")
	def("aten::gelu_backward", geluBackward, "aten::gelu_backward.grad_input")
	def("aten::silu_backward", gradRule("silu_backward_cpu", siluGrad), "aten::silu_backward.grad_input")
	def("aten::sigmoid_backward", gradRule("sigmoid_backward_cpu", sigmoidGrad), "aten::sigmoid_backward.grad_input")
	def("aten::tanh_backward", gradRule("tanh_backward_cpu", tanhGrad), "aten::tanh_backward.grad_input")
	def("aten::log_sigmoid_forward", logSigmoidForward, "aten::log_sigmoid_forward.output")
	def("aten::log_sigmoid_backward", gradRule("log_sigmoid_backward_cpu", logSigmoidGrad), "aten::log_sigmoid_backward.grad_input")
}
