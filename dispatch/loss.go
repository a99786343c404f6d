package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// Reduction modes of the loss ops (at::Reduction).
const (
	reduceNone int64 = 0
	reduceMean int64 = 1
	reduceSum  int64 = 2
)

// nllShapes checks nll_loss's input and target (spatial for nll_loss2d) and
// returns the class dim of the input.
func nllShapes(m, tm TensorMeta, spatial bool) (int, error) {
	cd, err := nllDims(m, tm, spatial)
	if err == nil && tm.DType != Int64 && tm.DType != Uint8 {
		err = Errorf("expected target dtype to be Long or Byte, but got %s", scalarTypeName(tm.DType))
	}
	return cd, err
}

// nllDims checks the ranks and sizes of nll_loss's input and target.
func nllDims(m, tm TensorMeta, spatial bool) (int, error) {
	mismatch := Errorf("size mismatch (got input: %s, target: %s)", shapeString(m.Sizes), shapeString(tm.Sizes))
	if spatial {
		if m.Rank() != 4 {
			return 0, Errorf("only batches of spatial inputs supported (4D tensors), but got input of dimension: %d", m.Rank())
		}
		if tm.Rank() != 3 {
			return 0, Errorf("only batches of spatial targets supported (3D tensors) but got targets of dimension: %d", tm.Rank())
		}
		if m.Sizes[0] != tm.Sizes[0] || m.Sizes[2] != tm.Sizes[1] || m.Sizes[3] != tm.Sizes[2] {
			return 0, mismatch
		}
		return 1, nil
	}
	if m.Rank() < 1 || m.Rank() > 2 {
		return 0, Errorf("input tensor should be 1D or 2D")
	}
	if tm.Rank() > 1 {
		return 0, Errorf("0D or 1D target tensor expected, multi-target not supported")
	}
	if m.Rank() == 1 {
		if tm.Rank() != 0 && !(tm.Rank() == 1 && tm.Sizes[0] == 1) {
			return 0, mismatch
		}
		return 0, nil
	}
	if tm.Rank() != 1 || m.Sizes[0] != tm.Sizes[0] {
		return 0, mismatch
	}
	return 1, nil
}

// nllPicks checks the arguments of nll_loss{,2d}_{forward,backward} starting
// at input index in and returns, in the input's accumulation type, the
// one-hot mask of valid targets over the input's shape and each target's
// weight (0 where ignored), in the target's shape less the class dim.
// checkRange reads the targets to the host to check them at the call.
func nllPicks(c *Ctx, in int, spatial, checkRange bool) (onehot, wt *hlo.Value, err error) {
	m, tm := c.Meta(in), c.Meta(in+1)
	cd, err := nllShapes(m, tm, spatial)
	if err != nil {
		return nil, nil, err
	}
	classes := m.Sizes[cd]
	if c.IsTensor(in+2) && (c.Meta(in+2).Numel() != classes || c.Meta(in+2).Rank() != 1) {
		return nil, nil, Errorf("weight tensor should be defined either for all %d classes or no classes but got weight tensor of shape: %s",
			classes, shapeString(c.Meta(in+2).Sizes))
	}
	ignore := c.Int(in+4, -100)
	if checkRange && !c.NoHostChecks && !c.knownWithin(in+1, 0, classes-1) {
		vs, err := c.R.Int64s(c.Args[in+1].Handles[0])
		if err != nil {
			return nil, nil, err
		}
		for _, v := range vs {
			if v != ignore && (v < 0 || v >= classes) {
				return nil, nil, IndexErrorf("Target %d is out of bounds.", v)
			}
		}
	}
	b := c.B
	acc := accumElem(m.DType)
	ts := m.Sizes
	if m.Rank() == 1 {
		ts = nil
	} else {
		ts = append(append([]int64{}, m.Sizes[:cd]...), m.Sizes[cd+1:]...)
	}
	t := b.Reshape(b.Convert(c.T(in+1), hlo.S64), ts...)
	valid := b.Compare(hlo.NE, t, b.BroadcastTo(b.Scalar(hlo.S64, float64(ignore)), ts))
	others := keptMapping(m.Rank(), []int64{int64(cd)})
	tb := b.BroadcastInDim(t, m.Sizes, others)
	hot := b.Compare(hlo.EQ, b.Iota(hlo.T(hlo.S64, m.Sizes...), cd), tb)
	hot = b.And(hot, b.BroadcastInDim(valid, m.Sizes, others))
	zero := full(b, FromElem(acc), ts, 0)
	if w := c.optional(in+2, acc); w != nil {
		wb := b.BroadcastInDim(b.Reshape(w, classes), m.Sizes, []int64{int64(cd)})
		wt = sumOver(b, b.Select(hot, wb, full(b, FromElem(acc), m.Sizes, 0)), int64(cd))
	} else {
		wt = b.Select(valid, full(b, FromElem(acc), ts, 1), zero)
	}
	return hot, wt, nil
}

// reductionArg reads a reduction argument.
func reductionArg(c *Ctx, i int) (int64, error) {
	r := c.Int(i, reduceMean)
	if r < reduceNone || r > reduceSum {
		return 0, Errorf("%d is not a valid value for reduction", r)
	}
	return r, nil
}

// nllLoss is nll_loss_forward / nll_loss2d_forward(self, target, weight,
// reduction, ignore_index) -> (output, total_weight). Targets are checked
// against the class count at the call (ignore_index is exempt).
func nllLoss(spatial bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if !m.DType.IsFloat() {
			return nil, notImplemented("nll_loss_forward_out_frame", m.DType)
		}
		red, err := reductionArg(c, 3)
		if err != nil {
			return nil, err
		}
		hot, wt, err := nllPicks(c, 0, spatial, true)
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := accumElem(m.DType)
		cd := int64(0)
		if m.Rank() > 1 {
			cd = 1
		}
		x := b.Convert(c.T(0), acc)
		picked := sumOver(b, b.Select(hot, x, full(b, FromElem(acc), m.Sizes, 0)), cd)
		loss := b.Neg(b.Mul(picked, wt))
		e := m.DType.Elem()
		all := iotaDims(loss.T.Rank())
		total := sumOver(b, wt, all...)
		switch red {
		case reduceNone:
			return []*hlo.Value{b.Convert(loss, e), b.Convert(total, e)}, nil
		case reduceSum:
			return []*hlo.Value{b.Convert(sumOver(b, loss, all...), e), b.Convert(total, e)}, nil
		}
		return []*hlo.Value{b.Convert(b.Div(sumOver(b, loss, all...), total), e), b.Convert(total, e)}, nil
	}
}

// nllLossBackward is nll_loss_backward / nll_loss2d_backward(grad_output,
// self, target, weight, reduction, ignore_index, total_weight): minus the
// target's weight (over total_weight for mean) at each valid target.
func nllLossBackward(spatial bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(1)
		red, err := reductionArg(c, 4)
		if err != nil {
			return nil, err
		}
		hot, wt, err := nllPicks(c, 1, spatial, false)
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := accumElem(m.DType)
		g := b.Convert(c.T(0), acc)
		if red == reduceNone {
			if !slices.Equal(c.Meta(0).Sizes, wt.T.Shape) {
				return nil, Errorf("Expected a tensor of dimension %d and tensor.size[0] == %d but got: dimension %d and tensor.size[0] == %d",
					wt.T.Rank(), firstDim(wt.T.Shape), c.Meta(0).Rank(), firstDim(c.Meta(0).Sizes))
			}
		} else {
			if c.Meta(0).Numel() != 1 {
				return nil, Errorf("Expected a single element grad_output tensor, but got: %s", shapeString(c.Meta(0).Sizes))
			}
			g = b.Reshape(g)
			if red == reduceMean {
				g = b.Div(g, b.Reshape(b.Convert(c.T(6), acc)))
			}
			g = b.BroadcastTo(g, wt.T.Shape)
		}
		cd := int64(0)
		if m.Rank() > 1 {
			cd = 1
		}
		per := b.BroadcastInDim(b.Neg(b.Mul(g, wt)), m.Sizes, keptMapping(m.Rank(), []int64{cd}))
		r := b.Select(hot, per, full(b, FromElem(acc), m.Sizes, 0))
		return []*hlo.Value{b.Convert(r, m.DType.Elem())}, nil
	}
}

func firstDim(s []int64) int64 {
	if len(s) == 0 {
		return 1
	}
	return s[0]
}

// mseLoss is mse_loss(self, target, reduction).
func mseLoss(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1)
	if !d.IsFloat() {
		return nil, notImplemented("mse_cpu", d)
	}
	red, err := reductionArg(c, 2)
	if err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, 0, 1)
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(d)
	diff := b.Sub(b.Convert(vs[0], acc), b.Convert(vs[1], acc))
	sq := b.Mul(diff, diff)
	all := iotaDims(sq.T.Rank())
	switch red {
	case reduceSum:
		sq = sumOver(b, sq, all...)
	case reduceMean:
		sq = meanReduced(b, sq, all...)
	}
	return []*hlo.Value{b.Convert(sq, d.Elem())}, nil
}

// mseLossBackward is mse_loss_backward(grad_output, self, target, reduction):
// 2 * (self - target) * grad, over self's numel for mean.
func mseLossBackward(c *Ctx) ([]*hlo.Value, error) {
	d := c.resultType(0, 1, 2)
	if !d.IsFloat() {
		return nil, notImplemented("mse_backward_cpu", d)
	}
	red, err := reductionArg(c, 3)
	if err != nil {
		return nil, err
	}
	vs, _, err := c.broadcastArgs(d, 0, 1, 2)
	if err != nil {
		return nil, err
	}
	b := c.B
	acc := accumElem(d)
	g, x, t := b.Convert(vs[0], acc), b.Convert(vs[1], acc), b.Convert(vs[2], acc)
	norm := 2.0
	if red == reduceMean {
		norm /= float64(max(c.Meta(1).Numel(), 1))
	}
	r := b.Mul(b.Mul(splat(b, x, norm), b.Sub(x, t)), g)
	return []*hlo.Value{b.Convert(r, d.Elem())}, nil
}

func init() {
	def("aten::nll_loss_forward", nllLoss(false), "aten::nll_loss_forward.output").Needs = hostArgs(1)
	def("aten::nll_loss2d_forward", nllLoss(true), "aten::nll_loss2d_forward.output").Needs = hostArgs(1)
	def("aten::nll_loss_backward", nllLossBackward(false), "aten::nll_loss_backward.grad_input").Needs = hostArgs(2)
	def("aten::nll_loss2d_backward", nllLossBackward(true), "aten::nll_loss2d_backward.grad_input").Needs = hostArgs(2)
	def("aten::mse_loss", mseLoss)
	def("aten::mse_loss_backward", mseLossBackward, "aten::mse_loss_backward.grad_input")
}
