package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// gluHalves checks glu's dim and returns the two halves of x along it.
func gluHalves(c *Ctx, m TensorMeta, x *hlo.Value, dimArg int) (a, g *hlo.Value, dim int64, err error) {
	if m.Rank() == 0 {
		return nil, nil, 0, Errorf("glu does not support scalars because halving size must be even")
	}
	dim, err = wrapDim(c.Int(dimArg, -1), m.Rank())
	if err != nil {
		return nil, nil, 0, err
	}
	n := m.Sizes[dim]
	if n%2 != 0 {
		return nil, nil, 0, Errorf("Halving dimension must be even, but dimension %d is size %d", dim, n)
	}
	lo := make([]int64, m.Rank())
	hi := append([]int64{}, m.Sizes...)
	st := make([]int64, m.Rank())
	for i := range st {
		st[i] = 1
	}
	hi[dim] = n / 2
	a = c.B.Slice(x, lo, hi, st)
	lo2 := append([]int64{}, lo...)
	lo2[dim] = n / 2
	hi[dim] = n
	g = c.B.Slice(x, lo2, hi, st)
	return a, g, dim, nil
}

// glu is glu(self, dim): the first half times the sigmoid of the second.
func glu(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	if !m.DType.IsFloat() {
		return nil, notImplemented("glu", m.DType)
	}
	b := c.B
	acc := accumElem(m.DType)
	a, g, _, err := gluHalves(c, m, b.Convert(c.T(0), acc), 1)
	if err != nil {
		return nil, err
	}
	return []*hlo.Value{b.Convert(b.Mul(a, b.Logistic(g)), m.DType.Elem())}, nil
}

// gluBackward is glu_backward(grad_output, self, dim).
func gluBackward(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(1)
	if !m.DType.IsFloat() {
		return nil, notImplemented("glu_backward", m.DType)
	}
	b := c.B
	acc := accumElem(m.DType)
	a, h, dim, err := gluHalves(c, m, b.Convert(c.T(1), acc), 2)
	if err != nil {
		return nil, err
	}
	if want := a.T.Shape; !slices.Equal(c.Meta(0).Sizes, want) {
		return nil, Errorf("glu_backward: grad_output of size %s does not match %s", shapeString(c.Meta(0).Sizes), shapeString(want))
	}
	g := b.Convert(c.T(0), acc)
	s := b.Logistic(h)
	ga := b.Mul(g, s)
	gh := b.Mul(b.Mul(ga, a), b.Sub(splat(b, s, 1), s))
	return []*hlo.Value{b.Convert(b.Concatenate(int(dim), ga, gh), m.DType.Elem())}, nil
}

func init() {
	def("aten::glu", glu, "aten::glu.out")
	def("aten::glu_backward", gluBackward, "aten::glu_backward.grad_input")
}
