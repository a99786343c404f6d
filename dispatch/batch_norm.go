package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// bnArgs says where one batch norm overload keeps its arguments; a negative
// index means the overload does not have that argument.
type bnArgs struct {
	runMean, runVar, training, momentum, eps int
	// train is the training flag of overloads without a training argument;
	// trainIfNoStats trains exactly when the running stats are absent.
	train, trainIfNoStats bool
	// reserve adds the empty fourth result of _batch_norm_with_update.
	reserve bool
}

// bnChannels checks batch norm's input and returns its channel count and the
// dims statistics are taken over (all but dim 1).
func bnChannels(m TensorMeta) (int64, []int64, error) {
	if m.Rank() < 2 {
		return 0, nil, Errorf("batch_norm: expected an input with at least 2 dims (got input of size %s)", shapeString(m.Sizes))
	}
	dims := []int64{0}
	for i := 2; i < m.Rank(); i++ {
		dims = append(dims, int64(i))
	}
	return m.Sizes[1], dims, nil
}

// perChannel broadcasts a [C] vector to shape along dim 1.
func perChannel(b *hlo.Builder, v *hlo.Value, shape []int64) *hlo.Value {
	return b.BroadcastInDim(v, shape, []int64{1})
}

// checkVector checks that optional tensor argument i, when present, holds ch values.
func (c *Ctx) checkVector(i int, what string, ch int64) error {
	if c.IsTensor(i) && c.Meta(i).Numel() != ch {
		return Errorf("%s should contain %d elements not %d", what, ch, c.Meta(i).Numel())
	}
	return nil
}

// statDType is the dtype of batch norm's saved statistics: the parameters'
// dtype when they differ from a half-precision input, else the input's.
func statDType(c *Ctx, m TensorMeta, paramIdx ...int) DType {
	for _, i := range paramIdx {
		if i >= 0 && c.IsTensor(i) && c.Meta(i).DType != m.DType {
			return c.Meta(i).DType
		}
	}
	return m.DType
}

// batchNorm builds the forward batch norm overloads. In training the batch
// statistics normalize the input and, when running stats are given, update
// them on device: running = (1 - momentum) * running + momentum * stat, with
// the unbiased variance. In evaluation the running stats normalize and the
// saved statistics are empty.
func batchNorm(a bnArgs) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		m := c.Meta(0)
		if !m.DType.IsFloat() {
			return nil, notImplemented("batch_norm", m.DType)
		}
		ch, dims, err := bnChannels(m)
		if err != nil {
			return nil, err
		}
		hasStats := a.runMean >= 0 && c.IsTensor(a.runMean) && c.IsTensor(a.runVar)
		train := a.train
		switch {
		case a.training >= 0:
			train = c.Bool(a.training, true)
		case a.trainIfNoStats:
			train = !hasStats
		}
		for _, p := range []struct {
			i    int
			name string
		}{{1, "weight"}, {2, "bias"}, {a.runMean, "running_mean"}, {a.runVar, "running_var"}} {
			if p.i >= 0 {
				if err := c.checkVector(p.i, p.name, ch); err != nil {
					return nil, err
				}
			}
		}
		if !train && !hasStats {
			return nil, Errorf("running_mean and running_var must be defined in evaluation mode")
		}
		b := c.B
		acc := accumElem(m.DType)
		eps := c.Float(a.eps, 1e-5)
		x := b.Convert(c.T(0), acc)
		var mean, invstd *hlo.Value
		if train {
			mean, invstd = moments(b, x, dims, eps)
		} else {
			mean = c.optional(a.runMean, acc)
			rv := c.optional(a.runVar, acc)
			invstd = b.Rsqrt(b.Add(rv, splat(b, rv, eps)))
		}
		y := b.Mul(b.Sub(x, perChannel(b, mean, m.Sizes)), perChannel(b, invstd, m.Sizes))
		if w := c.optional(1, acc); w != nil {
			y = b.Mul(y, perChannel(b, w, m.Sizes))
		}
		if bias := c.optional(2, acc); bias != nil {
			y = b.Add(y, perChannel(b, bias, m.Sizes))
		}
		if train && hasStats {
			n := m.Numel() / max(ch, 1)
			mom := b.BroadcastTo(c.R.Scalar(c.Float(a.momentum, 0.1), acc), []int64{ch})
			keep := b.Sub(splat(b, mom, 1), mom)
			xc := b.Sub(x, perChannel(b, mean, m.Sizes))
			ss := sumOver(b, b.Mul(xc, xc), dims...)
			unbiased := b.Div(ss, splat(b, ss, float64(max(n-1, 0))))
			update := func(i int, stat *hlo.Value) {
				old := c.optional(i, acc)
				v := b.Add(b.Mul(keep, b.Reshape(old, ch)), b.Mul(mom, stat))
				c.WriteArg(i, 0, b.Reshape(b.Convert(v, c.Meta(i).DType.Elem()), c.Meta(i).Sizes...))
			}
			update(a.runMean, mean)
			update(a.runVar, unbiased)
		}
		sd := statDType(c, m, 1, a.runMean).Elem()
		outs := []*hlo.Value{b.Convert(y, m.DType.Elem())}
		if train {
			outs = append(outs, b.Convert(mean, sd), b.Convert(invstd, sd))
		} else {
			empty := full(b, FromElem(sd), []int64{0}, 0)
			outs = append(outs, empty, empty)
		}
		if a.reserve {
			outs = append(outs, full(b, Uint8, []int64{0}, 0))
		}
		return outs, nil
	}
}

// batchNormBackward is native_batch_norm_backward(grad_out, input, weight,
// running_mean, running_var, save_mean, save_invstd, train, eps,
// output_mask), and batch_norm_backward with the same leading arguments.
func batchNormBackward(c *Ctx) ([]*hlo.Value, error) {
	m := c.Meta(1)
	ch, dims, err := bnChannels(m)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(c.Meta(0).Sizes, m.Sizes) {
		return nil, Errorf("Expected grad_out to have the input's shape %s, but got %s", shapeString(m.Sizes), shapeString(c.Meta(0).Sizes))
	}
	train := c.Bool(7, true)
	mask := c.mask(9, 3)
	b := c.B
	acc := accumElem(m.DType)
	var mean, invstd *hlo.Value
	if train {
		if !c.IsTensor(5) || !c.IsTensor(6) {
			return nil, Errorf("batch_norm_backward: save_mean and save_invstd must be defined in training mode")
		}
		mean, invstd = c.optional(5, acc), c.optional(6, acc)
	} else {
		if !c.IsTensor(3) || !c.IsTensor(4) {
			return nil, Errorf("batch_norm_backward: running_mean and running_var must be defined in evaluation mode")
		}
		mean = c.optional(3, acc)
		rv := c.optional(4, acc)
		invstd = b.Rsqrt(b.Add(rv, splat(b, rv, c.Float(8, 1e-5))))
	}
	mean, invstd = b.Reshape(mean, ch), b.Reshape(invstd, ch)
	x, g := b.Convert(c.T(1), acc), b.Convert(c.T(0), acc)
	rstd := perChannel(b, invstd, m.Sizes)
	xhat := b.Mul(b.Sub(x, perChannel(b, mean, m.Sizes)), rstd)
	var w *hlo.Value
	if c.IsTensor(2) {
		w = perChannel(b, b.Reshape(c.optional(2, acc), ch), m.Sizes)
	}
	pd := statDType(c, m, 2)
	dx := maskedOut(b, mask[0], func() *hlo.Value {
		var r *hlo.Value
		if train {
			r = normalizeGrad(b, g, xhat, rstd, dims)
		} else {
			r = b.Mul(g, rstd)
		}
		if w != nil {
			r = b.Mul(r, w)
		}
		return r
	}, m.DType.Elem(), m.Sizes)
	dw := maskedOut(b, mask[1], func() *hlo.Value { return sumOver(b, b.Mul(g, xhat), dims...) }, pd.Elem(), []int64{ch})
	db := maskedOut(b, mask[2], func() *hlo.Value { return sumOver(b, g, dims...) }, pd.Elem(), []int64{ch})
	return []*hlo.Value{dx, dw, db}, nil
}

func init() {
	full := bnArgs{runMean: 3, runVar: 4, training: 5, momentum: 6, eps: 7}
	def("aten::native_batch_norm", batchNorm(full))
	def("aten::_native_batch_norm_legit", batchNorm(full), "aten::_native_batch_norm_legit.out")
	def("aten::_native_batch_norm_legit.no_stats",
		batchNorm(bnArgs{runMean: -1, runVar: -1, training: 3, momentum: 4, eps: 5}),
		"aten::_native_batch_norm_legit.no_stats_out")
	def("aten::_native_batch_norm_legit_no_training",
		batchNorm(bnArgs{runMean: 3, runVar: 4, training: -1, momentum: 5, eps: 6}))
	def("aten::_batch_norm_with_update",
		batchNorm(bnArgs{runMean: 3, runVar: 4, training: -1, momentum: 5, eps: 6, train: true, reserve: true}), "")
	def("aten::_batch_norm_no_update",
		batchNorm(bnArgs{runMean: 3, runVar: 4, training: -1, momentum: 5, eps: 6, trainIfNoStats: true, reserve: true}))
	def("aten::native_batch_norm_backward", batchNormBackward)
	def("aten::batch_norm_backward", batchNormBackward, "")
}
