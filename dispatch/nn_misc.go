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
	dim, err = normDim(c.Int(dimArg, -1), m.Rank())
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

// normDim wraps a possibly negative dim into [0, rank).
func normDim(d int64, rank int) (int64, error) {
	r := int64(max(rank, 1))
	if d < -r || d >= r {
		return 0, IndexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -r, r-1, d)
	}
	if d < 0 {
		d += r
	}
	return d, nil
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

// maxUnpool places each input value at the flat position its index names
// within an output plane of the given spatial size; the rest are zero.
func maxUnpool(spatial int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		in, im := c.Meta(0), c.Meta(1)
		out := c.Ints(2, nil)
		if len(out) != spatial {
			return nil, Errorf("There should be exactly %d elements (depth, height, width) in output_size, but got %d elements.", spatial, len(out))
		}
		r := in.Rank()
		if r != spatial+1 && r != spatial+2 {
			return nil, Errorf("Input to max_unpooling%dd should be a %dd or %dd Tensor, but got a tensor with %d dimensions.",
				spatial, spatial+1, spatial+2, r)
		}
		if im.DType != Int64 {
			return nil, Errorf("elements in indices should be type int64 but got: %s", scalarTypeName(im.DType))
		}
		if !slices.Equal(in.Sizes, im.Sizes) {
			return nil, Errorf("Expected shape of indices to be same as that of the input tensor (%s) but got indices tensor with shape: %s",
				shapeString(in.Sizes), shapeString(im.Sizes))
		}
		for _, s := range in.Sizes[1:] {
			if s == 0 {
				return nil, Errorf("max_unpooling%dd(): Expected input to have non-zero size for non-batch dimensions, but got %s",
					spatial, shapeString(in.Sizes))
			}
		}
		planes := numel(in.Sizes[:r-spatial])
		inPlane := numel(in.Sizes[r-spatial:])
		outPlane := numel(out)
		b := c.B
		x := b.Reshape(c.T(0), planes, inPlane)
		flat := b.Reshape(c.T(1), planes, inPlane, 1)
		plane := b.Iota(hlo.T(hlo.S64, planes, inPlane, 1), 0)
		ind := b.Concatenate(2, plane, flat)
		zero := b.BroadcastTo(b.Scalar(in.DType.Elem(), 0), []int64{planes, outPlane})
		y := b.Scatter(zero, ind, x, nil, []int64{0, 1}, []int64{0, 1}, 2,
			func(rb *hlo.Builder, old, new *hlo.Value) *hlo.Value { return new })
		shape := append(append([]int64{}, in.Sizes[:r-spatial]...), out...)
		return []*hlo.Value{b.Reshape(y, shape...)}, nil
	}
}

// channelShuffle is channel_shuffle(self, groups): channels viewed as
// [groups, C/groups] and transposed.
func channelShuffle(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(0)
	gr := c.Int(1, 1)
	if m.Rank() < 3 {
		return nil, Errorf("channel_shuffle expects input to have at least 3 dimensions, but got input with sizes %s", shapeString(m.Sizes))
	}
	if gr <= 0 {
		return nil, Errorf("Number of groups to divide channels in must be positive. Value of groups:%d", gr)
	}
	ch := m.Sizes[1]
	if ch%gr != 0 {
		return nil, Errorf("Number of channels must be divisible by groups. Got %d channels and %d groups.", ch, gr)
	}
	b := c.B
	split := append([]int64{m.Sizes[0], gr, ch / gr}, m.Sizes[2:]...)
	perm := []int64{0, 2, 1}
	for i := 3; i < len(split); i++ {
		perm = append(perm, int64(i))
	}
	return []*hlo.Value{b.Reshape(b.Transpose(b.Reshape(c.T(0), split...), perm...), m.Sizes...)}, nil
}

func init() {
	def("aten::channel_shuffle", channelShuffle, "aten::channel_shuffle.out")
	def("aten::glu", glu, "aten::glu.out")
	def("aten::glu_backward", gluBackward, "aten::glu_backward.grad_input")
	def("aten::max_unpool2d", maxUnpool(2), "aten::max_unpool2d.out")
	def("aten::max_unpool3d", maxUnpool(3), "aten::max_unpool3d.out")
}
