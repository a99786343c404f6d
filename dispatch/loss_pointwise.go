package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// pointLoss describes an elementwise loss of (self, target): its forward
// per element and its derivative with respect to self. p is the loss's
// float parameter (delta, beta), w the optional weight (nil when absent).
type pointLoss struct {
	name string
	// weighted losses take Tensor? weight before reduction.
	weighted bool
	// param is the default of the float parameter after reduction (none when
	// the loss has none).
	param    float64
	hasParam bool
	f        func(b *hlo.Builder, x, t *hlo.Value, p float64) *hlo.Value
	df       func(b *hlo.Builder, x, t *hlo.Value, p float64) *hlo.Value
}

// args returns where the weight, reduction and parameter arguments sit when
// self is argument first.
func (l pointLoss) args(first int) (weight, red, param int) {
	weight = -1
	red = first + 2
	if l.weighted {
		weight, red = first+2, first+3
	}
	return weight, red, red + 1
}

// forward is the loss op: elementwise values, optionally weighted, reduced.
func (l pointLoss) forward(c *Ctx) ([]*hlo.Value, error) {
	wi, ri, pi := l.args(0)
	idx := []int{0, 1}
	if wi >= 0 && c.IsTensor(wi) {
		idx = append(idx, wi)
	}
	d := c.resultType(idx...)
	if !d.IsFloat() {
		return nil, notImplemented(l.name, d)
	}
	if l.weighted && !slices.Equal(c.Meta(0).Sizes, c.Meta(1).Sizes) {
		return nil, Errorf("Using a target size (%s) that is different to the input size (%s) is deprecated. Please ensure they have the same size.",
			shapeString(c.Meta(1).Sizes), shapeString(c.Meta(0).Sizes))
	}
	red, err := reductionArg(c, ri)
	if err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, idx...)
	if err != nil {
		return nil, err
	}
	if l.name == "huber_loss" && c.Float(pi, l.param) <= 0 {
		return nil, Errorf("huber_loss does not support non-positive values for delta.")
	}
	b := c.B
	acc := accumElem(d)
	x, t := b.Convert(vs[0], acc), b.Convert(vs[1], acc)
	r := l.f(b, x, t, c.Float(pi, l.param))
	if len(vs) > 2 {
		r = b.Mul(r, b.Convert(vs[2], acc))
	}
	all := iotaDims(r.T.Rank())
	switch red {
	case reduceSum:
		r = sumOver(b, r, all...)
	case reduceMean:
		r = meanReduced(b, r, all...)
	}
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

// backward is the loss op's backward: the derivative times the gradient,
// over self's numel for mean.
func (l pointLoss) backward(c *Ctx) ([]*hlo.Value, error) {
	wi, ri, pi := l.args(1)
	idx := []int{0, 1, 2}
	if wi >= 0 && c.IsTensor(wi) {
		idx = append(idx, wi)
	}
	d := c.resultType(idx...)
	if !d.IsFloat() {
		return nil, notImplemented(l.name+"_backward", d)
	}
	red, err := reductionArg(c, ri)
	if err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, idx...)
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(d)
	g, x, t := b.Convert(vs[0], acc), b.Convert(vs[1], acc), b.Convert(vs[2], acc)
	r := b.Mul(l.df(b, x, t, c.Float(pi, l.param)), g)
	if len(vs) > 3 {
		r = b.Mul(r, b.Convert(vs[3], acc))
	}
	if red == reduceMean {
		r = b.Div(r, splat(b, r, float64(max(c.Meta(1).Numel(), 1))))
	}
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

// huber is huber_loss: quadratic within delta of the target, linear beyond.
func huber(b *hlo.Builder, x, t *hlo.Value, delta float64) *hlo.Value {
	z := b.Abs(b.Sub(x, t))
	quad := b.Mul(splat(b, z, 0.5), b.Mul(z, z))
	lin := b.Mul(splat(b, z, delta), b.Sub(z, splat(b, z, 0.5*delta)))
	return b.Select(b.Compare(hlo.LT, z, splat(b, z, delta)), quad, lin)
}

// huberGrad is huber_loss's derivative: -delta, x-t or delta.
func huberGrad(b *hlo.Builder, x, t *hlo.Value, delta float64) *hlo.Value {
	z := b.Sub(x, t)
	r := b.Select(b.Compare(hlo.GT, z, splat(b, z, delta)), splat(b, z, delta), z)
	return b.Select(b.Compare(hlo.LT, z, splat(b, z, -delta)), splat(b, z, -delta), r)
}

// smoothL1 is smooth_l1_loss: quadratic within beta of the target, linear
// beyond; beta 0 is the l1 loss.
func smoothL1(b *hlo.Builder, x, t *hlo.Value, beta float64) *hlo.Value {
	z := b.Abs(b.Sub(x, t))
	if beta == 0 {
		return z
	}
	quad := b.Div(b.Mul(splat(b, z, 0.5), b.Mul(z, z)), splat(b, z, beta))
	lin := b.Sub(z, splat(b, z, 0.5*beta))
	return b.Select(b.Compare(hlo.LT, z, splat(b, z, beta)), quad, lin)
}

// smoothL1Grad is smooth_l1_loss's derivative as PyTorch's kernel computes it.
func smoothL1Grad(b *hlo.Builder, x, t *hlo.Value, beta float64) *hlo.Value {
	z := b.Sub(x, t)
	one := splat(b, z, 1)
	var mid *hlo.Value
	if beta == 0 {
		mid = one
	} else {
		mid = b.Div(z, splat(b, z, beta))
	}
	r := b.Select(b.Compare(hlo.GE, z, splat(b, z, beta)), one, mid)
	return b.Select(b.Compare(hlo.LE, z, splat(b, z, -beta)), b.Neg(one), r)
}

// bce is binary_cross_entropy with the logs clamped at -100.
func bce(b *hlo.Builder, x, t *hlo.Value, _ float64) *hlo.Value {
	one := splat(b, x, 1)
	lo := splat(b, x, -100)
	l1 := b.Max(b.Log(x), lo)
	l0 := b.Max(b.Log(b.Sub(one, x)), lo)
	return b.Neg(b.Add(b.Mul(t, l1), b.Mul(b.Sub(one, t), l0)))
}

// bceGrad is binary_cross_entropy's derivative: (x - t) / max(x (1 - x), 1e-12).
func bceGrad(b *hlo.Builder, x, t *hlo.Value, _ float64) *hlo.Value {
	den := b.Max(b.Mul(b.Sub(splat(b, x, 1), x), x), splat(b, x, 1e-12))
	return b.Div(b.Sub(x, t), den)
}

func init() {
	losses := []pointLoss{
		{name: "huber_loss", param: 1, hasParam: true, f: huber, df: huberGrad},
		{name: "smooth_l1_loss", param: 1, hasParam: true, f: smoothL1, df: smoothL1Grad},
		{name: "binary_cross_entropy", weighted: true, f: bce, df: bceGrad},
	}
	for _, l := range losses {
		def("aten::"+l.name, l.forward, "aten::"+l.name+".out")
		bw := "aten::" + l.name + "_backward"
		if l.name == "huber_loss" {
			def(bw, l.backward, bw+".out")
		} else {
			def(bw, l.backward, bw+".grad_input")
		}
	}
}
