package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// typeMetaName returns the C++ type name PyTorch's Cauchy check prints for d.
func typeMetaName(d DType) string {
	switch d {
	case Int64:
		return "long int"
	case Int32:
		return "int"
	case Int16:
		return "short int"
	case Int8:
		return "signed char"
	case Uint8:
		return "unsigned char"
	}
	return d.String()
}

// cauchyRule is cauchy(self, median, sigma, *, generator): self's shape and
// dtype filled with median + sigma * tan(pi * (U - 1/2)), as CPU draws it.
func cauchyRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	median, sigma := c.Float(1, 0), c.Float(2, 1)
	if !(sigma > 0) {
		return nil, Errorf("cauchy_ expects sigma > 0.0, but found sigma=%g", sigma)
	}
	if !m.DType.IsFloat() {
		return nil, Errorf("Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you specified %s", typeMetaName(m.DType))
	}
	b := c.B
	u := c.uniform01(3, m.Sizes, m.DType)
	ce := u.T.Elem
	k := func(v float64) *hlo.Value { return b.BroadcastTo(b.Scalar(ce, v), m.Sizes) }
	t := b.Tan(b.Mul(k(math.Pi), b.Sub(u, k(0.5))))
	mu := b.BroadcastTo(c.R.Scalar(median, ce), m.Sizes)
	s := b.BroadcastTo(c.R.Scalar(sigma, ce), m.Sizes)
	return []*hlo.Value{b.Convert(b.Add(mu, b.Mul(s, t)), m.DType.Elem())}, nil
}

// logNormalRule is log_normal(self, mean, std, *, generator): exp of a
// normal draw with the given mean and standard deviation.
func logNormalRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	mean, std := c.Float(1, 1), c.Float(2, 2)
	if !(std > 0) {
		return nil, Errorf("log_normal_ expects std > 0.0, but found std=%g", std)
	}
	if !m.DType.IsFloat() {
		return nil, notImplemented("log_normal_cpu", m.DType)
	}
	b := c.B
	z := c.stdNormal(3, m.Sizes, m.DType)
	ce := z.T.Elem
	mu := b.BroadcastTo(c.R.Scalar(mean, ce), m.Sizes)
	sd := b.BroadcastTo(c.R.Scalar(std, ce), m.Sizes)
	return []*hlo.Value{b.Convert(b.Exp(b.Add(mu, b.Mul(z, sd))), m.DType.Elem())}, nil
}

// geometricRule is geometric(self, p, *, generator): the number of Bernoulli
// trials up to the first success, ceil(log(U) / log1p(-p)) with U in (0, 1],
// at least 1, in self's dtype (integer dtypes included, as on CPU).
func geometricRule(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	p := c.Float(1, 0.5)
	if !(p > 0 && p < 1) {
		return nil, Errorf("geometric_ expects p to be in (0, 1), but got p=%g", p)
	}
	if m.DType == Bool || !(m.DType.IsFloat() || m.DType.IsIntegral(false)) {
		return nil, notImplemented("geometric_cpu", m.DType)
	}
	b := c.B
	ud := m.DType
	if !ud.IsFloat() {
		ud = Float64
	}
	u := c.uniform01(2, m.Sizes, ud)
	ce := u.T.Elem
	one := b.BroadcastTo(b.Scalar(ce, 1), m.Sizes)
	lp := b.BroadcastTo(b.Log1p(b.Neg(c.R.Scalar(p, ce))), m.Sizes)
	g := b.Max(b.Ceil(b.Div(b.Log(b.Sub(one, u)), lp)), one)
	return []*hlo.Value{b.Convert(g, m.DType.Elem())}, nil
}

func init() {
	def("aten::cauchy", cauchyRule).Needs = randomAt(3)
	def("aten::log_normal", logNormalRule).Needs = randomAt(3)
	def("aten::geometric", geometricRule).Needs = randomAt(2)
}
