package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// beta runs the backward recursion from each sequence's last step down to
// step 0: log_beta [T, B, S'], -inf past a sequence's input length and past
// position 2 * target length.
func (p *ctcProblem) beta(lpl *hlo.Value) *hlo.Value {
	b, e := p.b, p.elem
	shape := []int64{p.n, p.sp}
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), shape) }
	s := p.sIndex()
	end := p.perB(b.Add(p.tl, p.tl))
	valid := b.Compare(hlo.LE, s, end)
	// Skipping from s+2 is allowed where that label differs and s+2 is in range.
	up2 := ctcShiftLabelsLeft(b, p.labels, 2)
	skip := b.And(b.Compare(hlo.LT, s, b.Sub(end, k(1))), b.Compare(hlo.NE, up2, p.labels))
	// The start values at step il-1: the last blank and the last label.
	start := b.Or(b.Compare(hlo.EQ, s, end), b.And(b.Compare(hlo.EQ, s, b.Sub(end, k(1))),
		b.Compare(hlo.GT, p.perB(p.tl), k(0))))
	last := p.perB(b.Sub(p.il, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 1), []int64{p.n})))
	ninf := ctcFull(b, e, math.Inf(-1), shape...)
	lb := ctcFull(b, e, math.Inf(-1), p.t, p.n, p.sp)
	T := p.t
	out := b.For(T, []*hlo.Value{ninf, lb, lpl, skip, valid, start, last},
		func(rb *hlo.Builder, i *hlo.Value, a []*hlo.Value) []*hlo.Value {
			next, lb, lpl, skip, valid, start, last := a[0], a[1], a[2], a[3], a[4], a[5], a[6]
			t := rb.Sub(rb.ConstantInt(hlo.T(hlo.S64), T-1), i)
			ninf := ctcFull(rb, next.T.Elem, math.Inf(-1), next.T.Shape...)
			lpt := ctcTimeSlice(rb, lpl, t)
			b3 := rb.Select(skip, ctcShift(rb, next, -2), ninf)
			rec := rb.Select(valid, rb.Add(ctcLSE3(rb, next, ctcShift(rb, next, -1), b3), lpt), ninf)
			tb := rb.BroadcastTo(t, next.T.Shape)
			cur := rb.Select(rb.Compare(hlo.EQ, tb, last), rb.Select(start, lpt, ninf), rec)
			cur = rb.Select(rb.Compare(hlo.GT, tb, last), ninf, cur)
			return []*hlo.Value{cur, ctcTimeStore(rb, lb, cur, t), lpl, skip, valid, start, last}
		})
	return out[1]
}

// ctcShiftLabelsLeft moves [B, S'] labels k places left, filling with -1.
func ctcShiftLabelsLeft(b *hlo.Builder, l *hlo.Value, k int64) *hlo.Value {
	B, S := l.T.Shape[0], l.T.Shape[1]
	fill := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), -1), []int64{B, min(k, S)})
	if k >= S {
		return fill
	}
	return b.Concatenate(1, b.Slice(l, []int64{0, k}, []int64{B, S}, []int64{1, 1}), fill)
}

// grad combines alpha and beta into the gradient with respect to log_probs:
// exp(lp) - exp(lse_{s: l'(s) = c}(alpha + beta) + nll - lp), times the
// incoming gradient, zero past each input length (and, with zero_infinity,
// for infinite losses).
func (p *ctcProblem) grad(gOut, la, lb, nll *hlo.Value) *hlo.Value {
	b, e := p.b, p.elem
	// Masked-out positions add -inf, which leaves a class's sum unchanged.
	lab := b.Add(la, lb)
	lcab := p.classSums(lab)
	cshape := []int64{p.t, p.n, p.c}
	lp := p.lp
	nllB := b.BroadcastInDim(nll, cshape, []int64{1})
	g := b.Mul(b.Sub(pexp(b, lp), pexp(b, b.Sub(b.Add(lcab, nllB), lp))), b.BroadcastInDim(gOut, cshape, []int64{1}))
	zero := ctcFull(b, e, 0, cshape...)
	ti := b.Iota(hlo.T(hlo.S64, cshape...), 0)
	past := b.Compare(hlo.GE, ti, b.BroadcastInDim(p.il, cshape, []int64{1}))
	g = b.Select(past, zero, g)
	if p.zeroInf {
		g = b.Select(b.Compare(hlo.EQ, nllB, splat(b, nllB, math.Inf(1))), zero, g)
	}
	return g
}

// ctcLSE2 is log(exp(acc) + exp(v)) as CPU accumulates it, v itself where acc is -inf.
func ctcLSE2(rb *hlo.Builder, acc, v *hlo.Value) *hlo.Value {
	m := rb.Max(acc, v)
	r := rb.Add(plog(rb, rb.Add(pexp(rb, rb.Sub(acc, m)), pexp(rb, rb.Sub(v, m)))), m)
	return rb.Select(rb.Compare(hlo.EQ, acc, splat(rb, acc, math.Inf(-1))), v, r)
}

// classSums is, per (t, b, class c), the log of the summed exp(alpha + beta)
// over the positions s whose label is c: [T, B, C], accumulated pairwise from
// the last position down to the first as CPU does.
func (p *ctcProblem) classSums(lab *hlo.Value) *hlo.Value {
	b, e := p.b, p.elem
	T, B, C, S := p.t, p.n, p.c, p.sp
	acc := ctcFull(b, e, math.Inf(-1), T*B*C)
	out := b.For(S, []*hlo.Value{acc, lab, p.labels}, func(rb *hlo.Builder, i *hlo.Value, a []*hlo.Value) []*hlo.Value {
		acc, lab, labels := a[0], a[1], a[2]
		s := rb.Sub(rb.ConstantInt(hlo.T(hlo.S64), S-1), i)
		z := rb.ConstantInt(hlo.T(hlo.S64), 0)
		v := rb.Reshape(rb.DynamicSlice(lab, []*hlo.Value{z, z, s}, []int64{T, B, 1}), T, B)
		l := rb.Reshape(rb.DynamicSlice(labels, []*hlo.Value{z, s}, []int64{B, 1}), B)
		sh := []int64{T, B}
		k := func(x int64) *hlo.Value { return rb.BroadcastTo(rb.ConstantInt(hlo.T(hlo.S64), x), sh) }
		row := rb.Add(rb.Mul(rb.Iota(hlo.T(hlo.S64, sh...), 0), k(B)), rb.Iota(hlo.T(hlo.S64, sh...), 1))
		idx := rb.Add(rb.Mul(row, k(C)), rb.BroadcastInDim(l, sh, []int64{1}))
		acc = rb.ScatterFlat(acc, idx, v, ctcLSE2)
		return []*hlo.Value{acc, lab, labels}
	})
	return b.Reshape(out[0], T, B, C)
}

// ctcLossBackwardRule is _ctc_loss_backward(grad, log_probs, targets,
// input_lengths, target_lengths, neg_log_likelihood, log_alpha, blank,
// zero_infinity), with int[] or tensor lengths.
func ctcLossBackwardRule(c *Ctx) ([]*hlo.Value, error) {
	p, err := newCTC(c, 1, c.Int(7, 0), c.Bool(8, false))
	if err != nil {
		return nil, err
	}
	b := c.B
	la := b.Convert(b.Transpose(c.T(6), 1, 0, 2), p.elem)
	if !ctcSameShape(la.T.Shape, []int64{p.t, p.n, p.sp}) {
		return nil, Errorf("ctc_loss_backward: log_alpha has the wrong shape %s", shapeString(c.Meta(6).Sizes))
	}
	lb := p.beta(p.labelProbs())
	g := p.grad(b.Convert(c.T(0), p.elem), la, lb, b.Convert(c.T(5), p.elem))
	return []*hlo.Value{g}, nil
}

// ctcSameShape says whether two shapes are equal.
func ctcSameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func init() {
	def("aten::_ctc_loss_backward", ctcLossBackwardRule, "aten::_ctc_loss_backward.out").Needs = Needs{Uploads: true}
	def("aten::_ctc_loss_backward.Tensor", ctcLossBackwardRule).Needs = Needs{HostArgs: []int{3, 4}, Uploads: true}
}
