package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// fusedAdam builds _fused_adam_ and _fused_adamw_ (and their tensor_lr
// overloads): one Adam step over the lists params (0), grads (1), exp_avgs
// (2), exp_avg_sqs (3), max_exp_avg_sqs (4) at the steps in state_steps (5,
// already incremented by the optimizer), mutating params and the moments in
// place. lr (6) is a float or a tensor; the hyperparameters are runtime
// inputs so a scheduler does not recompile. AdamW decays the weights
// directly; Adam adds the decay to the gradient.
func fusedAdam(adamw bool) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		n := len(c.Args[0].Handles)
		for _, k := range []int{1, 2, 3, 5} {
			if len(c.Args[k].Handles) != n {
				return nil, Errorf("Tensor lists must have the same number of tensors, got %d and %d", n, len(c.Args[k].Handles))
			}
		}
		amsgrad, maximize := c.Bool(11, false), c.Bool(12, false)
		if amsgrad && len(c.Args[4].Handles) != n {
			return nil, Errorf("Tensor lists must have the same number of tensors, got %d and %d", n, len(c.Args[4].Handles))
		}
		b := c.B
		params := c.Args[0]
		for i := 0; i < n; i++ {
			m := params.Tensors[i]
			if !m.DType.IsFloat() {
				return nil, Errorf("_fused_adam_ expects floating point params, got %s", m.DType)
			}
			for _, k := range []int{1, 2, 3} {
				if !slices.Equal(c.Args[k].Tensors[i].Sizes, m.Sizes) {
					return nil, Errorf("all tensors of the lists must have the shape of the params: %v vs %v", c.Args[k].Tensors[i].Sizes, m.Sizes)
				}
			}
		}
		ce := opmath(c)
		scalar := func(i int) *hlo.Value { return c.R.Scalar(c.Float(i, 0), ce) }
		lr := c.learningRate(6, ce)
		beta1, beta2, wd, eps := scalar(7), scalar(8), scalar(9), scalar(10)
		one := b.Scalar(ce, 1)
		decay := c.Float(9, 0) != 0
		amp := c.ampScaling(13, 14, ce)
		for i := 0; i < n; i++ {
			m := params.Tensors[i]
			sh := m.Sizes
			bc := func(v *hlo.Value) *hlo.Value { return b.BroadcastTo(v, sh) }
			rd := func(k int) *hlo.Value { return b.Convert(c.R.Read(c.Args[k].Handles[i]), ce) }
			p, g, ea, eas := rd(0), amp.unscale(c, i, rd(1)), rd(2), rd(3)
			step := b.Reshape(b.Convert(c.R.Read(c.Args[5].Handles[i]), ce))
			if maximize {
				g = b.Neg(g)
			}
			if decay {
				if adamw {
					p = b.Mul(p, bc(b.Sub(one, b.Mul(lr, wd))))
				} else {
					g = b.Add(g, b.Mul(bc(wd), p))
				}
			}
			ea = b.Add(ea, b.Mul(bc(b.Sub(one, beta1)), b.Sub(g, ea)))
			eas = b.Add(b.Mul(bc(beta2), eas), b.Mul(bc(b.Sub(one, beta2)), b.Mul(g, g)))
			bc1 := b.Sub(one, b.Pow(beta1, step))
			bc2sqrt := b.Sqrt(b.Sub(one, b.Pow(beta2, step)))
			stepSize := b.Div(lr, bc1)
			v := eas
			if amsgrad {
				v = b.Max(rd(4), eas)
				amp.write(c, 4, i, v)
			}
			denom := b.Add(b.Div(b.Sqrt(v), bc(bc2sqrt)), bc(eps))
			p = b.Sub(p, b.Mul(bc(stepSize), b.Div(ea, denom)))
			amp.write(c, 0, i, p)
			amp.write(c, 2, i, ea)
			amp.write(c, 3, i, eas)
		}
		return nil, nil
	}
}

// fusedSGD is _fused_sgd_(params, grads, momentum_buffers, *, weight_decay,
// momentum, lr, dampening, nesterov, maximize, is_first_step) and its
// tensor_lr overload: one SGD step mutating params and the momentum buffers
// (an empty list without momentum).
func fusedSGD(c *Ctx) ([]*hlo.Value, error) {
	n := len(c.Args[0].Handles)
	momentum := c.Float(4, 0)
	if len(c.Args[1].Handles) != n || (momentum != 0 && len(c.Args[2].Handles) != n) {
		return nil, Errorf("Tensor lists must have the same number of tensors, got %d, %d and %d", n, len(c.Args[1].Handles), len(c.Args[2].Handles))
	}
	b := c.B
	ce := opmath(c)
	amp := c.ampScaling(10, 11, ce)
	lr := c.learningRate(5, ce)
	wd, mom := c.R.Scalar(c.Float(3, 0), ce), c.R.Scalar(momentum, ce)
	damp := c.R.Scalar(1-c.Float(6, 0), ce)
	nesterov, maximize, first := c.Bool(7, false), c.Bool(8, false), c.Bool(9, false)
	for i := 0; i < n; i++ {
		m := c.Args[0].Tensors[i]
		if !slices.Equal(c.Args[1].Tensors[i].Sizes, m.Sizes) {
			return nil, Errorf("all tensors of the lists must have the shape of the params: %v vs %v", c.Args[1].Tensors[i].Sizes, m.Sizes)
		}
		bc := func(v *hlo.Value) *hlo.Value { return b.BroadcastTo(v, m.Sizes) }
		p := b.Convert(c.R.Read(c.Args[0].Handles[i]), ce)
		g := amp.unscale(c, i, b.Convert(c.R.Read(c.Args[1].Handles[i]), ce))
		if maximize {
			g = b.Neg(g)
		}
		if c.Float(3, 0) != 0 {
			g = b.Add(g, b.Mul(bc(wd), p))
		}
		if momentum != 0 {
			buf := g
			if !first {
				old := b.Convert(c.R.Read(c.Args[2].Handles[i]), ce)
				buf = b.Add(b.Mul(bc(mom), old), b.Mul(bc(damp), g))
			}
			amp.write(c, 2, i, buf)
			if nesterov {
				g = b.Add(g, b.Mul(bc(mom), buf))
			} else {
				g = buf
			}
		}
		amp.write(c, 0, i, b.Sub(p, b.Mul(bc(lr), g)))
	}
	return nil, nil
}

// fusedAdagrad is _fused_adagrad_(params, grads, state_sums, state_steps, *,
// lr, lr_decay, weight_decay, eps, maximize, grad_scale, found_inf) and its
// tensor_lr overload: one Adagrad step at the steps in state_steps (already
// incremented), mutating params and the sums of squares in place.
func fusedAdagrad(c *Ctx) ([]*hlo.Value, error) {
	n := len(c.Args[0].Handles)
	for _, k := range []int{1, 2, 3} {
		if len(c.Args[k].Handles) != n {
			return nil, Errorf("Tensor lists must have the same number of tensors, got %d and %d", n, len(c.Args[k].Handles))
		}
	}
	b := c.B
	ce := opmath(c)
	amp := c.ampScaling(9, 10, ce)
	lr := c.learningRate(4, ce)
	lrDecay, wd, eps := c.R.Scalar(c.Float(5, 0), ce), c.R.Scalar(c.Float(6, 0), ce), c.R.Scalar(c.Float(7, 0), ce)
	one := b.Scalar(ce, 1)
	for i := 0; i < n; i++ {
		m := c.Args[0].Tensors[i]
		if !m.DType.IsFloat() {
			return nil, Errorf("_fused_adagrad_ expects floating point params, got %s", m.DType)
		}
		for _, k := range []int{1, 2} {
			if !slices.Equal(c.Args[k].Tensors[i].Sizes, m.Sizes) {
				return nil, Errorf("all tensors of the lists must have the shape of the params: %v vs %v", c.Args[k].Tensors[i].Sizes, m.Sizes)
			}
		}
		bc := func(v *hlo.Value) *hlo.Value { return b.BroadcastTo(v, m.Sizes) }
		rd := func(k int) *hlo.Value { return b.Convert(c.R.Read(c.Args[k].Handles[i]), ce) }
		p, g, sum := rd(0), amp.unscale(c, i, rd(1)), rd(2)
		step := b.Reshape(rd(3))
		if c.Bool(8, false) {
			g = b.Neg(g)
		}
		if c.Float(6, 0) != 0 {
			g = b.Add(g, b.Mul(bc(wd), p))
		}
		clr := b.Div(lr, b.Add(one, b.Mul(b.Sub(step, one), lrDecay)))
		sum = b.Add(sum, b.Mul(g, g))
		p = b.Sub(p, b.Mul(bc(clr), b.Div(g, b.Add(b.Sqrt(sum), bc(eps)))))
		amp.write(c, 0, i, p)
		amp.write(c, 2, i, sum)
	}
	return nil, nil
}

// opmath is the type a fused optimizer computes in, as CPU's and CUDA's kernels
// do: float64 for float64 params (the optimizers group params by dtype, so a
// call's params share one), float32 for the others.
func opmath(c *Ctx) hlo.Elem {
	if ts := c.Args[0].Tensors; len(ts) > 0 && ts[0].DType == Float64 {
		return hlo.F64
	}
	return hlo.F32
}

// learningRate is argument i of a fused optimizer, a float or (the tensor_lr
// overloads) a one-element tensor, as a scalar of type ce: a runtime input
// either way, so that a scheduler does not recompile.
func (c *Ctx) learningRate(i int, ce hlo.Elem) *hlo.Value {
	if c.IsTensor(i) {
		return c.B.Reshape(c.B.Convert(c.T(i), ce))
	}
	return c.R.Scalar(c.Float(i, 0), ce)
}

// ampScaling is what a fused optimizer does for GradScaler: gradients are
// divided by grad_scale (argument gs) and stored back unscaled, and where
// found_inf (argument fi) is 1 the step changes nothing at all, as CPU's
// kernels do. Both stay on the device: the skip is a select, not a read.
type ampScaling struct {
	scale *hlo.Value // grad_scale, or nil
	skip  *hlo.Value // found_inf == 1 (a pred scalar), or nil
}

func (c *Ctx) ampScaling(gs, fi int, ce hlo.Elem) ampScaling {
	b := c.B
	var a ampScaling
	if c.IsTensor(gs) {
		a.scale = b.Reshape(b.Convert(c.T(gs), ce))
	}
	if c.IsTensor(fi) {
		f := b.Reshape(b.Convert(c.T(fi), hlo.F32))
		a.skip = b.Compare(hlo.EQ, f, b.Scalar(hlo.F32, 1))
	}
	return a
}

// unscale returns gradient i (g, of the grads list, argument 1) divided by
// grad_scale, which it also writes back; g itself without a grad_scale.
func (a ampScaling) unscale(c *Ctx, i int, g *hlo.Value) *hlo.Value {
	if a.scale == nil {
		return g
	}
	g = c.B.Div(g, c.B.BroadcastTo(a.scale, g.T.Shape))
	a.write(c, 1, i, g)
	return g
}

// write stores v into tensor i of list argument k in its dtype, or keeps the
// old value where found_inf is 1.
func (a ampScaling) write(c *Ctx, k, i int, v *hlo.Value) {
	d := c.Args[k].Tensors[i].DType.Elem()
	v = c.B.Convert(v, d)
	if a.skip != nil {
		old := c.R.Read(c.Args[k].Handles[i])
		v = c.B.Select(c.B.BroadcastTo(a.skip, v.T.Shape), old, v)
	}
	c.WriteArg(k, i, v)
}

func init() {
	for _, ov := range []string{"", ".tensor_lr"} {
		full := "aten::_fused_sgd_" + ov
		alias(full, &Rule{Name: full, Fn: fusedSGD}, Functional)
	}
	for _, ov := range []string{"", ".tensor_lr"} {
		full := "aten::_fused_adagrad_" + ov
		alias(full, &Rule{Name: full, Fn: fusedAdagrad}, Functional)
	}
	for _, name := range []string{"adam", "adamw"} {
		fn := fusedAdam(name == "adamw")
		for _, ov := range []string{"", ".tensor_lr"} {
			full := "aten::_fused_" + name + "_" + ov
			alias(full, &Rule{Name: full, Fn: fn}, Functional)
		}
	}
}
