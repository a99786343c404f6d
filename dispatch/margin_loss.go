package dispatch

import "torchtpu/hlo"

// marginFrames returns the frame count and class count of a margin loss
// input: a 0-d or 1-d input is one frame.
func marginFrames(m TensorMeta) (int64, int64, error) {
	switch m.Rank() {
	case 0:
		return 1, 1, nil
	case 1:
		if m.Sizes[0] == 0 {
			return 0, 0, Errorf("Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s", shapeString(m.Sizes))
		}
		return 1, m.Sizes[0], nil
	case 2:
		if m.Sizes[1] == 0 {
			return 0, 0, Errorf("Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s", shapeString(m.Sizes))
		}
		return m.Sizes[0], m.Sizes[1], nil
	}
	return 0, 0, Errorf("Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s", shapeString(m.Sizes))
}

// multiMargin holds the shared pieces of multi_margin_loss and its backward.
type multiMargin struct {
	f, k    int64
	d       DType
	x       *hlo.Value // [F, C] in d
	onehot  *hlo.Value // [F, C] pred: the target class
	z       *hlo.Value // [F, C] margin - x[y] + x[i], zero on the target class
	scale   *hlo.Value // [F, C] weight[y] / C
	p       float64
	outNone bool // reduction none gives one value per frame (target has a dim)
}

// multiMarginArgs reads self (x), target (t), p, margin and weight at the given indices.
func (c *Ctx) multiMarginArgs(x, t, p, margin, weight int) (*multiMargin, error) {
	m, tm := c.Meta(x), c.Meta(t)
	f, k, err := marginFrames(m)
	if err != nil {
		return nil, err
	}
	if !m.DType.IsFloat() {
		return nil, notImplemented("multi_margin_loss_cpu_kernel", m.DType)
	}
	if err := multiMarginShapeCheck(m, tm, c, weight); err != nil {
		return nil, err
	}
	pv := c.Float(p, 1)
	if pv != 1 && pv != 2 {
		return nil, Errorf("only p == 1 and p == 2 supported")
	}
	b, d := c.B, opmathType(m.DType)
	e, fc := d.Elem(), []int64{f, k}
	mm := &multiMargin{f: f, k: k, d: d, p: pv, outNone: tm.Rank() > 0}
	mm.x = b.Reshape(b.Convert(c.T(x), e), fc...)
	tgt := b.BroadcastInDim(b.Reshape(b.Convert(c.T(t), hlo.S64), f), fc, []int64{0})
	mm.onehot = b.Compare(hlo.EQ, b.Iota(hlo.T(hlo.S64, fc...), 1), tgt)
	zero := full(b, d, fc, 0)
	xy := b.Reduce(b.Select(mm.onehot, mm.x, zero), b.Scalar(e, 0), hlo.ReduceSum, 1)
	mg := b.BroadcastTo(c.R.Scalar(c.Float(margin, 1), e), fc)
	z := b.Add(b.Sub(mg, b.BroadcastInDim(xy, fc, []int64{0})), mm.x)
	mm.z = b.Select(mm.onehot, zero, z)
	wy := full(b, d, []int64{f}, 1)
	if c.Has(weight) {
		w := b.BroadcastInDim(b.Reshape(b.Convert(c.T(weight), e), k), fc, []int64{1})
		wy = b.Reduce(b.Select(mm.onehot, w, zero), b.Scalar(e, 0), hlo.ReduceSum, 1)
	}
	mm.scale = b.Div(b.BroadcastInDim(wy, fc, []int64{0}), full(b, d, fc, float64(k)))
	return mm, nil
}

// multiMarginShapeCheck checks multi_margin_loss's input, target and weight
// (argument weight) shapes, in the order of ATen's multi_margin_loss_shape_check.
func multiMarginShapeCheck(m, tm TensorMeta, c *Ctx, weight int) error {
	f, k, err := marginFrames(m)
	if err != nil {
		return err
	}
	if tm.Numel() != f || tm.Rank() > 1 {
		return Errorf("multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples "+
			"(batch size). Expected target size [%d], but got %s. Input has shape %s.", f, shapeString(tm.Sizes), shapeString(m.Sizes))
	}
	if c.Has(weight) {
		if wm := c.Meta(weight); wm.Rank() > 1 || wm.Numel() != k {
			return Errorf("inconsistent weight size, expected %d but got %s", k, shapeString(wm.Sizes))
		}
	}
	return nil
}

// checkMarginTargets reads the targets (argument t) on the host, before any
// tensor value is read, and checks that each names a class of self (argument x).
func (c *Ctx) checkMarginTargets(x, t int) error {
	_, k, err := marginFrames(c.Meta(x))
	if err != nil {
		return err
	}
	if tm := c.Meta(t); tm.DType != Int64 {
		return Errorf("expected scalar type Long but found %s", scalarTypeName(tm.DType))
	}
	ts, err := c.R.Int64s(c.Args[t].Handles[0])
	if err != nil {
		return err
	}
	for _, v := range ts {
		if v < 0 || v >= k {
			return Errorf("target out of range")
		}
	}
	return nil
}

// multiMarginLoss is multi_margin_loss(self, target, p, margin, weight,
// reduction): per frame, the sum over other classes of
// max(0, margin - x[y] + x[i])**p * weight[y], divided by the class count.
func multiMarginLoss(c *Ctx) ([]*hlo.Value, error) {
	red, err := reductionArg(c, 5)
	if err != nil {
		return nil, err
	}
	if err := multiMarginShapeCheck(c.Meta(0), c.Meta(1), c, 4); err != nil {
		return nil, err
	}
	if err := c.checkMarginTargets(0, 1); err != nil {
		return nil, err
	}
	mm, err := c.multiMarginArgs(0, 1, 2, 3, 4)
	if err != nil {
		return nil, err
	}
	b, e := c.B, mm.d.Elem()
	fc := []int64{mm.f, mm.k}
	h := b.Max(mm.z, full(b, mm.d, fc, 0))
	if mm.p == 2 {
		h = b.Mul(h, h)
	}
	per := b.Reduce(b.Mul(h, mm.scale), b.Scalar(e, 0), hlo.ReduceSum, 1)
	out := c.Meta(0).DType.Elem()
	switch {
	case red == reduceNone && mm.outNone:
		return []*hlo.Value{b.Convert(per, out)}, nil
	case red == reduceNone:
		return []*hlo.Value{b.Convert(b.Reshape(per), out)}, nil
	}
	s := b.Reduce(per, b.Scalar(e, 0), hlo.ReduceSum, 0)
	if red == reduceMean {
		s = b.Div(s, b.Scalar(e, float64(mm.f)))
	}
	return []*hlo.Value{b.Convert(s, out)}, nil
}

// lossGradScale returns grad_output as a [F, C] factor for a per-frame loss:
// per frame for reduction none, divided by the frame count for mean.
func lossGradScale(c *Ctx, red int64, d DType, f, k int64) *hlo.Value {
	b, e := c.B, d.Elem()
	fc := []int64{f, k}
	g := b.Convert(c.T(0), e)
	if red == reduceNone && c.Meta(0).Numel() == f && c.Meta(0).Rank() > 0 {
		return b.BroadcastInDim(b.Reshape(g, f), fc, []int64{0})
	}
	g = b.BroadcastTo(b.Reshape(g), fc)
	if red == reduceMean && f > 0 {
		g = b.Div(g, full(b, d, fc, float64(f)))
	}
	return g
}

// multiMarginLossBackward is multi_margin_loss_backward(grad_output, self,
// target, p, margin, weight, reduction).
func multiMarginLossBackward(c *Ctx) ([]*hlo.Value, error) {
	red, err := reductionArg(c, 6)
	if err != nil {
		return nil, err
	}
	mm, err := c.multiMarginArgs(1, 2, 3, 4, 5)
	if err != nil {
		return nil, err
	}
	b, e := c.B, mm.d.Elem()
	fc := []int64{mm.f, mm.k}
	zero := full(b, mm.d, fc, 0)
	gz := b.Select(b.Compare(hlo.GT, mm.z, zero), full(b, mm.d, fc, 1), zero)
	if mm.p == 2 {
		gz = b.Mul(gz, b.Mul(full(b, mm.d, fc, 2), mm.z))
	}
	gz = b.Select(mm.onehot, zero, b.Mul(gz, mm.scale))
	total := b.BroadcastInDim(b.Reduce(gz, b.Scalar(e, 0), hlo.ReduceSum, 1), fc, []int64{0})
	gi := b.Select(mm.onehot, b.Neg(total), gz)
	gi = b.Mul(gi, lossGradScale(c, red, mm.d, mm.f, mm.k))
	m := c.Meta(1)
	return []*hlo.Value{b.Reshape(b.Convert(gi, m.DType.Elem()), m.Sizes...)}, nil
}

func init() {
	def("aten::multi_margin_loss", multiMarginLoss).Needs = hostArgs(1)
	def("aten::multi_margin_loss_backward", multiMarginLossBackward, "aten::multi_margin_loss_backward.grad_input")
}
