package dispatch

import "torchtpu/hlo"

// copyRule is copy(self, src, non_blocking): src converted to self's dtype and
// broadcast to self's shape. Its in-place form copy_ is how tensors move
// between dtypes and into views on the device.
func copyRule(c *Ctx) ([]*hlo.Value, error) {
	dst := c.Meta(0)
	src := c.Meta(1)
	if _, err := BroadcastShapes(dst.Sizes, src.Sizes); err != nil || len(src.Sizes) > len(dst.Sizes) {
		return nil, Errorf("the source of shape %s cannot be broadcast to the destination's shape %s",
			shapeString(src.Sizes), shapeString(dst.Sizes))
	}
	v := convertTo(c.B, c.T(1), src.DType, dst.DType)
	return []*hlo.Value{c.B.BroadcastTo(v, dst.Sizes)}, nil
}

// convertTo converts v from dtype from to dtype to with PyTorch's cast
// semantics: to bool is "!= 0", float to integer truncates toward zero.
func convertTo(b *hlo.Builder, v *hlo.Value, from, to DType) *hlo.Value {
	if from == to {
		return v
	}
	if from == Float8E5M2 {
		v = b.Float8CanonicalNaN(v) // a conversion makes every NaN PyTorch's
	}
	if to == Bool {
		zero := b.BroadcastTo(b.Scalar(from.Elem(), 0), v.T.Shape)
		return b.Compare(hlo.NE, v, zero)
	}
	v = b.Convert(v, to.Elem())
	if to == Float8E5M2 {
		// No NaN converted from another dtype may look like a float8_e5m2
		// payload kept in float32 (hlo.Float8Load).
		v = b.Float8CanonicalNaN(v)
	}
	return v
}

// clone is clone(self, *, memory_format): a fresh copy of the values. The
// memory order memory_format picks is the caller's (engine.OpOnLaidOut).
func clone(c *Ctx) ([]*hlo.Value, error) { return []*hlo.Value{c.T(0)}, nil }

func init() {
	def("aten::copy", copyRule, "").Range = sameRange(1)
	def("aten::clone", clone).Range = sameRange(0)
}
