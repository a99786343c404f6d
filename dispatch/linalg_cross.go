package dispatch

import "torchtpu/hlo"

// linalgCross is linalg_cross(self, other, *, dim): the cross product of
// 3-vectors along dim, with broadcasting.
func linalgCross(c *Ctx) ([]*hlo.Value, error) {
	m, om := c.Meta(0), c.Meta(1)
	if m.Rank() != om.Rank() {
		return nil, Errorf("linalg.cross: inputs must have the same number of dimensions.")
	}
	if m.DType != om.DType {
		return nil, Errorf("linalg.cross: expected input and other to have the same dtype, but got %s and %s", m.DType, om.DType)
	}
	shape, err := BroadcastShapes(m.Sizes, om.Sizes)
	if err != nil {
		return nil, err
	}
	given := c.Int(2, -1)
	dim, err := wrapDim(given, len(shape))
	if err != nil {
		return nil, err
	}
	if m.Sizes[dim] != 3 || om.Sizes[dim] != 3 {
		return nil, Errorf("linalg.cross: inputs dimension %d must have length 3. Got %d and %d", given, m.Sizes[dim], om.Sizes[dim])
	}
	b := c.B
	x, y := b.BroadcastTo(c.T(0), shape), b.BroadcastTo(c.T(1), shape)
	part := func(v *hlo.Value, k int64) *hlo.Value {
		start, limit, strides := make([]int64, len(shape)), append([]int64{}, shape...), make([]int64, len(shape))
		for i := range strides {
			strides[i] = 1
		}
		start[dim], limit[dim] = k, k+1
		return b.Slice(v, start, limit, strides)
	}
	comp := func(i, j int64) *hlo.Value {
		return b.Sub(b.Mul(part(x, i), part(y, j)), b.Mul(part(x, j), part(y, i)))
	}
	return []*hlo.Value{b.Concatenate(int(dim), comp(1, 2), comp(2, 0), comp(0, 1))}, nil
}

func init() {
	def("aten::linalg_cross", linalgCross)
}
