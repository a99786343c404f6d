package dispatch

import "torchtpu/hlo"

// multilabel holds the shared pieces of multilabel_margin_loss and its backward.
type multilabel struct {
	f, k     int64
	d        DType
	isTarget *hlo.Value // [F, C] pred: class j is one of the frame's targets
	active   *hlo.Value // [F, C, C] in d: 1/C where target k against class j has a positive hinge
	hinge    *hlo.Value // [F, C, C] max(0, 1 - x[y_k] + x[j]) on active pairs, else 0
	onehot   *hlo.Value // [F, C, C] pred: valid target k is class j
	perFrame bool       // reduction none gives one value per frame
}

// multilabelArgs reads self (argument x) and target (argument t): targets
// are the frame's leading entries before the first -1. checkRange reads the
// targets to the host to check, as CPU does, that each lies in [-1, classes).
func (c *Ctx) multilabelArgs(x, t int, checkRange bool) (*multilabel, error) {
	m, tm := c.Meta(x), c.Meta(t)
	f, k, err := marginFrames(m)
	if err != nil {
		return nil, err
	}
	if !tm.Defined || tm.Rank() != m.Rank() || tm.Numel() != f*k {
		return nil, Errorf("inconsistent target size: %s for input of size: %s", shapeString(tm.Sizes), shapeString(m.Sizes))
	}
	if checkRange && !c.NoHostChecks && !c.knownWithin(t, -1, k-1) {
		vs, err := c.R.Int64s(c.Args[t].Handles[0])
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v < -1 || v >= k {
				return nil, Errorf("argument #2 'target' is out of range: %d is not in [-1, %d)", v, k)
			}
		}
	}
	b, d := c.B, opmathType(m.DType)
	e := d.Elem()
	fc, fcc := []int64{f, k}, []int64{f, k, k}
	xv := b.Reshape(b.Convert(c.T(x), e), fc...)
	tv := b.Reshape(b.Convert(c.T(t), hlo.S64), fc...)
	pos := b.Iota(hlo.T(hlo.S64, fc...), 1)
	stop := b.Select(b.Compare(hlo.EQ, tv, full(b, Int64, fc, -1)), pos, full(b, Int64, fc, float64(k)))
	first := b.Reduce(stop, b.ConstantInt(hlo.T(hlo.S64), k), hlo.ReduceMin, 1)
	valid := b.Compare(hlo.LT, pos, b.BroadcastInDim(first, fc, []int64{0}))
	cls := b.Iota(hlo.T(hlo.S64, fcc...), 2)
	ml := &multilabel{f: f, k: k, d: d, perFrame: tm.Rank() > 1}
	ml.onehot = b.And(b.BroadcastInDim(valid, fcc, []int64{0, 1}),
		b.Compare(hlo.EQ, b.BroadcastInDim(tv, fcc, []int64{0, 1}), cls))
	ml.isTarget = b.Reduce(ml.onehot, b.Scalar(hlo.Pred, 0), hlo.ReduceOr, 1)
	zero := full(b, d, fcc, 0)
	xj := b.BroadcastInDim(xv, fcc, []int64{0, 2})
	xy := b.Reduce(b.Select(ml.onehot, xj, zero), b.Scalar(e, 0), hlo.ReduceSum, 2)
	z := b.Add(b.Sub(full(b, d, fcc, 1), b.BroadcastInDim(xy, fcc, []int64{0, 1})), xj)
	use := b.And(b.And(b.BroadcastInDim(valid, fcc, []int64{0, 1}), b.Not(b.BroadcastInDim(ml.isTarget, fcc, []int64{0, 2}))),
		b.Compare(hlo.GT, z, zero))
	ml.hinge = b.Select(use, z, zero)
	ml.active = b.Select(use, full(b, d, fcc, 1/float64(k)), zero)
	return ml, nil
}

// multilabelMarginLossForward is multilabel_margin_loss_forward(self, target,
// reduction) -> (output, is_target): per frame, the hinge 1 - x[y] + x[j]
// summed over targets y and non-target classes j, divided by the class count.
func multilabelMarginLossForward(c *Ctx) ([]*hlo.Value, error) {
	red, err := reductionArg(c, 2)
	if err != nil {
		return nil, err
	}
	ml, err := c.multilabelArgs(0, 1, true)
	if err != nil {
		return nil, err
	}
	b, e := c.B, ml.d.Elem()
	m := c.Meta(0)
	per := b.Div(b.Reduce(ml.hinge, b.Scalar(e, 0), hlo.ReduceSum, 1, 2), full(b, ml.d, []int64{ml.f}, float64(ml.k)))
	var out *hlo.Value
	switch {
	case red == reduceNone && ml.perFrame:
		out = per
	default:
		out = b.Reduce(per, b.Scalar(e, 0), hlo.ReduceSum, 0)
		if red == reduceMean {
			out = b.Div(out, b.Scalar(e, float64(ml.f)))
		}
	}
	isT := b.Select(ml.isTarget, full(b, m.DType, []int64{ml.f, ml.k}, 1), full(b, m.DType, []int64{ml.f, ml.k}, 0))
	return []*hlo.Value{b.Convert(out, m.DType.Elem()), b.Reshape(isT, c.Meta(1).Sizes...)}, nil
}

// multilabelMarginLossBackward is multilabel_margin_loss_backward(grad_output,
// self, target, reduction, is_target); is_target is recomputed from target.
func multilabelMarginLossBackward(c *Ctx) ([]*hlo.Value, error) {
	red, err := reductionArg(c, 3)
	if err != nil {
		return nil, err
	}
	ml, err := c.multilabelArgs(1, 2, false) // the forward checked the targets
	if err != nil {
		return nil, err
	}
	b, e := c.B, ml.d.Elem()
	fc, fcc := []int64{ml.f, ml.k}, []int64{ml.f, ml.k, ml.k}
	up := b.Reduce(ml.active, b.Scalar(e, 0), hlo.ReduceSum, 1)
	rows := b.BroadcastInDim(b.Reduce(ml.active, b.Scalar(e, 0), hlo.ReduceSum, 2), fcc, []int64{0, 1})
	down := b.Reduce(b.Select(ml.onehot, rows, full(b, ml.d, fcc, 0)), b.Scalar(e, 0), hlo.ReduceSum, 1)
	gi := b.Sub(up, down)
	g := b.Convert(c.T(0), e)
	if red == reduceNone && ml.perFrame {
		g = b.BroadcastInDim(b.Reshape(g, ml.f), fc, []int64{0})
	} else {
		g = b.BroadcastTo(b.Reshape(g), fc)
		if red == reduceMean {
			g = b.Div(g, full(b, ml.d, fc, float64(ml.f)))
		}
	}
	m := c.Meta(1)
	return []*hlo.Value{b.Reshape(b.Convert(b.Mul(gi, g), m.DType.Elem()), m.Sizes...)}, nil
}

func init() {
	def("aten::multilabel_margin_loss_forward", multilabelMarginLossForward, "aten::multilabel_margin_loss_forward.output").Needs = hostArgs(1)
	def("aten::multilabel_margin_loss_backward", multilabelMarginLossBackward, "aten::multilabel_margin_loss_backward.grad_input")
}
