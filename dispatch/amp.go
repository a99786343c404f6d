package dispatch

import "torchtpu/hlo"

// The two ops behind torch.amp.GradScaler. Both stay on the device, as CUDA's
// kernels do: found_inf and the scale are device scalars, so a scaled
// training step needs no host read until the optimizer asks whether to skip.

// ampScalarArg checks that argument i is a one-element float32 tensor, as
// CPU's kernels require, and returns its value as a scalar.
func (c *Ctx) ampScalarArg(i int, name string) (*hlo.Value, error) {
	m := c.Meta(i)
	if m.Numel() != 1 {
		return nil, Errorf("%s must be a 1-element tensor.", name)
	}
	if m.DType != Float32 {
		return nil, Errorf("%s must be a float tensor.", name)
	}
	return c.B.Reshape(c.T(i)), nil
}

// ampUnscale is _amp_foreach_non_finite_check_and_unscale_(self, found_inf,
// inv_scale): every tensor of self is multiplied by inv_scale in its opmath
// type, and found_inf becomes 1 when any value was not finite (it is never
// reset to 0 here).
func ampUnscale(c *Ctx) ([]*hlo.Value, error) {
	found, err := c.ampScalarArg(1, "found_inf")
	if err != nil {
		return nil, err
	}
	inv, err := c.ampScalarArg(2, "inv_scale")
	if err != nil {
		return nil, err
	}
	b := c.B
	bad := b.Scalar(hlo.Pred, 0)
	for i, m := range c.Args[0].Tensors {
		if !m.DType.IsFloat() {
			return nil, Errorf("_amp_foreach_non_finite_check_and_unscale_: expected floating point tensors, got %s", m.DType)
		}
		op := hlo.F32
		if m.DType == Float64 {
			op = hlo.F64
		}
		v := b.Convert(c.R.Read(c.Args[0].Handles[i]), op)
		if m.Numel() > 0 {
			all := b.Reduce(b.IsFinite(v), b.Scalar(hlo.Pred, 1), hlo.ReduceAnd, iotaDims(m.Rank())...)
			bad = b.Or(bad, b.Not(all))
		}
		scaled := b.Mul(v, b.BroadcastTo(b.Convert(inv, op), m.Sizes))
		c.WriteArg(0, i, b.Convert(scaled, m.DType.Elem()))
	}
	one := b.Scalar(hlo.F32, 1)
	c.WriteArg(1, 0, b.Reshape(b.Select(bad, one, found), c.Meta(1).Sizes...))
	return nil, nil
}

// ampUpdateScale is _amp_update_scale_(self, growth_tracker, found_inf,
// scale_growth_factor, scale_backoff_factor, growth_interval): after an
// overflow the scale backs off and the tracker restarts; otherwise after
// growth_interval clean steps in a row the scale grows (when the grown value
// is finite) and the tracker restarts. Products are taken in double and
// stored as float, as CPU's kernel does.
func ampUpdateScale(c *Ctx) ([]*hlo.Value, error) {
	scale, err := c.ampScalarArg(0, "current_scale")
	if err != nil {
		return nil, err
	}
	tm := c.Meta(1)
	if tm.Numel() != 1 {
		return nil, Errorf("growth_tracker must be a 1-element tensor.")
	}
	if tm.DType != Int32 {
		return nil, Errorf("growth_tracker must be an int tensor.")
	}
	found, err := c.ampScalarArg(2, "found_inf")
	if err != nil {
		return nil, err
	}
	b := c.B
	tracker := b.Reshape(c.T(1))
	growth, backoff := c.R.Scalar(c.Float(3, 0), hlo.F64), c.R.Scalar(c.Float(4, 0), hlo.F64)
	interval := c.R.Scalar(float64(c.Int(5, 0)), hlo.S32)
	wide := b.Convert(scale, hlo.F64)
	overflowed := b.Compare(hlo.NE, found, b.Scalar(hlo.F32, 0))
	successful := b.Add(tracker, b.Scalar(hlo.S32, 1))
	grows := b.Compare(hlo.EQ, successful, interval)
	grown := b.Convert(b.Mul(wide, growth), hlo.F32)
	grown = b.Select(b.IsFinite(grown), grown, scale)
	zero := b.Scalar(hlo.S32, 0)
	newScale := b.Select(overflowed, b.Convert(b.Mul(wide, backoff), hlo.F32), b.Select(grows, grown, scale))
	newTracker := b.Select(overflowed, zero, b.Select(grows, zero, successful))
	c.WriteArg(1, 0, b.Reshape(newTracker, tm.Sizes...))
	return []*hlo.Value{b.Reshape(newScale, c.Meta(0).Sizes...)}, nil
}

func init() {
	alias("aten::_amp_foreach_non_finite_check_and_unscale_",
		&Rule{Name: "aten::_amp_foreach_non_finite_check_and_unscale_", Fn: ampUnscale}, Functional)
	alias("aten::_amp_update_scale_", &Rule{Name: "aten::_amp_update_scale_", Fn: ampUpdateScale}, Inplace)
}
