package dispatch

import "torchtpu/hlo"

// BroadcastShapes returns the NumPy broadcast of shapes, or an error naming them.
func BroadcastShapes(shapes ...[]int64) ([]int64, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int64, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch {
			case d == out[off+i] || d == 1:
			case out[off+i] == 1:
				out[off+i] = d
			default:
				return nil, Errorf("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d",
					out[off+i], d, i+off)
			}
		}
	}
	return out, nil
}

// operandShape returns the shape argument i contributes to broadcasting.
func (c *Ctx) operandShape(i int) []int64 {
	if c.IsTensor(i) {
		return c.Meta(i).Sizes
	}
	return nil
}

// broadcastArgs converts arguments idx to dtype d and broadcasts them to one shape.
func (c *Ctx) broadcastArgs(d DType, idx ...int) ([]*hlo.Value, []int64, error) {
	shapes := make([][]int64, len(idx))
	for k, i := range idx {
		shapes[k] = c.operandShape(i)
	}
	shape, err := BroadcastShapes(shapes...)
	if err != nil {
		return nil, nil, err
	}
	vs := make([]*hlo.Value, len(idx))
	for k, i := range idx {
		vs[k] = c.B.BroadcastTo(c.Value(i, d), shape)
	}
	return vs, shape, nil
}

// resultType returns torch.result_type over arguments idx.
func (c *Ctx) resultType(idx ...int) DType {
	ops := make([]Operand, 0, len(idx))
	for _, i := range idx {
		if c.Has(i) {
			ops = append(ops, c.Operand(i))
		}
	}
	return ResultType(ops...)
}

// full returns a constant of shape s filled with v converted to d.
func full(b *hlo.Builder, d DType, s []int64, v float64) *hlo.Value {
	return b.BroadcastTo(b.Scalar(d.Elem(), v), s)
}
