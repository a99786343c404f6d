package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// ctcProblem is one _ctc_loss call prepared for the device: log_probs
// [T, B, C], the extended labels l' [B, S'] (blank, target 1, blank, target
// 2, ..., blank; S' = 2 * max target length + 1) and the lengths as runtime
// int64 tensors [B].
type ctcProblem struct {
	b       *hlo.Builder
	lp      *hlo.Value
	labels  *hlo.Value
	il, tl  *hlo.Value
	t, n, c int64
	sp      int64
	elem    hlo.Elem
	zeroInf bool
}

// ctcLengths reads an int[] argument, or an integer tensor argument to the host.
func ctcLengths(c *Ctx, i int) ([]int64, error) {
	if c.IsTensor(i) {
		return c.R.Int64s(c.Args[i].Handles[0])
	}
	return c.Ints(i, nil), nil
}

// newCTC checks and prepares log_probs (arg lpArg) and the targets and
// lengths that follow it.
func newCTC(c *Ctx, lpArg int, blank int64, zeroInf bool) (*ctcProblem, error) {
	m := c.Meta(lpArg)
	if len(m.Sizes) != 3 {
		return nil, Errorf("ctc_loss: expected log_probs to be a 3-D tensor, got %d-D", len(m.Sizes))
	}
	if m.DType != Float32 && m.DType != Float64 {
		return nil, notImplemented("ctc_loss_cpu", m.DType)
	}
	T, B, C := m.Sizes[0], m.Sizes[1], m.Sizes[2]
	if blank < 0 || blank >= C {
		return nil, Errorf("blank must be in label range")
	}
	il, err := ctcLengths(c, lpArg+2)
	if err != nil {
		return nil, err
	}
	tl, err := ctcLengths(c, lpArg+3)
	if err != nil {
		return nil, err
	}
	if int64(len(il)) != B {
		return nil, Errorf("input_lengths must be of size batch_size")
	}
	if int64(len(tl)) != B {
		return nil, Errorf("target_lengths must be of size batch_size")
	}
	tm := c.Meta(lpArg + 1)
	var maxS int64
	offsets := make([]int64, B)
	if len(tm.Sizes) == 1 {
		var pos int64
		for i, l := range tl {
			offsets[i] = pos
			pos += l
			maxS = max(maxS, l)
		}
	} else if len(tm.Sizes) == 2 {
		maxS = tm.Sizes[1]
		for i := range offsets {
			offsets[i] = int64(i) * tm.Sizes[1]
		}
	} else {
		return nil, Errorf("ctc_loss: expected targets to be 1-D or 2-D, got %d-D", len(tm.Sizes))
	}
	for i := range il {
		if il[i] > T || il[i] < 1 {
			return nil, Errorf("Expected input_lengths to have value at most %d, but got value %d (while checking arguments for ctc_loss_cpu)", T, il[i])
		}
		if tl[i] > maxS || tl[i] < 0 {
			return nil, Errorf("Expected tensor to have size at least %d at dimension 1, but got size %d for argument #2 'targets' (while checking arguments for ctc_loss_cpu)", tl[i], maxS)
		}
	}
	b := c.B
	p := &ctcProblem{b: b, lp: c.T(lpArg), t: T, n: B, c: C, sp: 2*maxS + 1,
		elem: m.DType.Elem(), zeroInf: zeroInf}
	p.il = c.R.Int64Tensor(il, []int64{B})
	p.tl = c.R.Int64Tensor(tl, []int64{B})
	// Extended labels: even positions are blank, odd ones read target (s-1)/2.
	shape := []int64{B, p.sp}
	it := hlo.T(hlo.S64, shape...)
	s := b.Iota(it, 1)
	two := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 2), shape)
	blankV := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), blank), shape)
	labels := blankV
	if tm.Sizes[len(tm.Sizes)-1] > 0 && maxS > 0 {
		total := tm.Sizes[0]
		if len(tm.Sizes) == 2 {
			total *= tm.Sizes[1]
		}
		flat := b.Convert(b.Reshape(c.T(lpArg+1), total), hlo.S64)
		j := b.Div(b.Sub(s, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 1), shape)), two)
		off := b.BroadcastInDim(c.R.Int64Tensor(offsets, []int64{B}), shape, []int64{0})
		idx := b.Clamp(b.ConstantInt(hlo.T(hlo.S64), 0), b.Add(off, j), b.ConstantInt(hlo.T(hlo.S64), total-1))
		odd := b.Compare(hlo.NE, b.Rem(s, two), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), shape))
		labels = b.Select(odd, b.GatherFlat(flat, idx), blankV)
	}
	p.labels = labels
	return p, nil
}

// ctcFull is a constant of float type e and the given shape filled with v.
func ctcFull(b *hlo.Builder, e hlo.Elem, v float64, shape ...int64) *hlo.Value {
	return b.BroadcastTo(b.Scalar(e, v), shape)
}

// ctcLSE3 is log(exp(a1) + exp(a2) + exp(a3)) the way CPU's kernel computes it
// (exp and log rounded from float64, like the C library's float functions).
func ctcLSE3(b *hlo.Builder, a1, a2, a3 *hlo.Value) *hlo.Value {
	m := b.Max(b.Max(a1, a2), a3)
	m = b.Select(b.Compare(hlo.EQ, m, splat(b, m, math.Inf(-1))), splat(b, m, 0), m)
	s := b.Add(b.Add(pexp(b, b.Sub(a1, m)), pexp(b, b.Sub(a2, m))), pexp(b, b.Sub(a3, m)))
	return b.Add(plog(b, s), m)
}

// ctcShift moves a [B, S'] value k places along S' (right for k > 0), filling with -inf.
func ctcShift(b *hlo.Builder, v *hlo.Value, k int64) *hlo.Value {
	B, S := v.T.Shape[0], v.T.Shape[1]
	a := k
	if a < 0 {
		a = -a
	}
	fill := ctcFull(b, v.T.Elem, math.Inf(-1), B, min(a, S))
	if a >= S {
		return fill
	}
	if k > 0 {
		return b.Concatenate(1, fill, b.Slice(v, []int64{0, 0}, []int64{B, S - a}, []int64{1, 1}))
	}
	return b.Concatenate(1, b.Slice(v, []int64{0, a}, []int64{B, S}, []int64{1, 1}), fill)
}

// labelProbs gathers log_probs at the extended labels: [T, B, S'].
func (p *ctcProblem) labelProbs() *hlo.Value {
	b := p.b
	shape := []int64{p.t, p.n, p.sp}
	it := hlo.T(hlo.S64, shape...)
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), shape) }
	row := b.Add(b.Mul(b.Iota(it, 0), k(p.n)), b.Iota(it, 1))
	idx := b.Add(b.Mul(row, k(p.c)), b.BroadcastInDim(p.labels, shape, []int64{1, 2}))
	return b.GatherFlat(b.Reshape(p.lp, p.t*p.n*p.c), idx)
}

// sIndex is the position index s as a [B, S'] int64 value.
func (p *ctcProblem) sIndex() *hlo.Value {
	return p.b.Iota(hlo.T(hlo.S64, p.n, p.sp), 1)
}

// perB broadcasts a [B] value over S'.
func (p *ctcProblem) perB(v *hlo.Value) *hlo.Value {
	return p.b.BroadcastInDim(v, []int64{p.n, p.sp}, []int64{0})
}

// ctcTimeSlice reads step t (a scalar int64) of a [T, B, S'] value.
func ctcTimeSlice(rb *hlo.Builder, v, t *hlo.Value) *hlo.Value {
	z := rb.ConstantInt(hlo.T(hlo.S64), 0)
	return rb.Reshape(rb.DynamicSlice(v, []*hlo.Value{t, z, z}, []int64{1, v.T.Shape[1], v.T.Shape[2]}),
		v.T.Shape[1], v.T.Shape[2])
}

// ctcTimeStore writes a [B, S'] value at step t of a [T, B, S'] value.
func ctcTimeStore(rb *hlo.Builder, v, x, t *hlo.Value) *hlo.Value {
	z := rb.ConstantInt(hlo.T(hlo.S64), 0)
	return rb.DynamicUpdateSlice(v, rb.Reshape(x, 1, x.T.Shape[0], x.T.Shape[1]), []*hlo.Value{t, z, z})
}

// alpha runs the forward recursion over time: log_alpha [T, B, S'].
func (p *ctcProblem) alpha(lpl *hlo.Value) *hlo.Value {
	b, e := p.b, p.elem
	s := p.sIndex()
	ninf := ctcFull(b, e, math.Inf(-1), p.n, p.sp)
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), []int64{p.n, p.sp}) }
	// Skipping from s-2 is allowed where that label differs (never for blanks).
	skip := b.And(b.Compare(hlo.GT, s, k(1)), b.Compare(hlo.NE, p.labels, ctcShiftLabels(b, p.labels, 2)))
	lp0 := ctcTimeSlice(b, lpl, b.ConstantInt(hlo.T(hlo.S64), 0))
	first := b.Or(b.Compare(hlo.EQ, s, k(0)), b.And(b.Compare(hlo.EQ, s, k(1)),
		b.Compare(hlo.GT, p.perB(p.tl), k(0))))
	a0 := b.Select(first, lp0, ninf)
	la := ctcTimeStore(b, ctcFull(b, e, math.Inf(-1), p.t, p.n, p.sp), a0, b.ConstantInt(hlo.T(hlo.S64), 0))
	out := b.For(p.t-1, []*hlo.Value{a0, la, lpl, skip}, func(rb *hlo.Builder, i *hlo.Value, a []*hlo.Value) []*hlo.Value {
		prev, la, lpl, skip := a[0], a[1], a[2], a[3]
		t := rb.Add(i, rb.ConstantInt(hlo.T(hlo.S64), 1))
		a3 := rb.Select(skip, ctcShift(rb, prev, 2), ctcFull(rb, prev.T.Elem, math.Inf(-1), prev.T.Shape...))
		cur := rb.Add(ctcLSE3(rb, prev, ctcShift(rb, prev, 1), a3), ctcTimeSlice(rb, lpl, t))
		return []*hlo.Value{cur, ctcTimeStore(rb, la, cur, t), lpl, skip}
	})
	return out[1]
}

// ctcShiftLabels moves [B, S'] labels k places right, filling with -1.
func ctcShiftLabels(b *hlo.Builder, l *hlo.Value, k int64) *hlo.Value {
	B, S := l.T.Shape[0], l.T.Shape[1]
	fill := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), -1), []int64{B, min(k, S)})
	if k >= S {
		return fill
	}
	return b.Concatenate(1, fill, b.Slice(l, []int64{0, 0}, []int64{B, S - k}, []int64{1, 1}))
}

// atEnd gathers log_alpha at step il-1 and position s (a [B] int64 value per batch).
func (p *ctcProblem) atEnd(la, s *hlo.Value) *hlo.Value {
	b := p.b
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), []int64{p.n}) }
	t := b.Sub(p.il, k(1))
	bi := b.Iota(hlo.T(hlo.S64, p.n), 0)
	s = b.Clamp(b.ConstantInt(hlo.T(hlo.S64), 0), s, b.ConstantInt(hlo.T(hlo.S64), p.sp-1))
	idx := b.Add(b.Mul(b.Add(b.Mul(t, k(p.n)), bi), k(p.sp)), s)
	return b.GatherFlat(b.Reshape(la, p.t*p.n*p.sp), idx)
}

// nll is the negative log likelihood [B] from log_alpha.
func (p *ctcProblem) nll(la *hlo.Value) *hlo.Value {
	b := p.b
	k := func(v int64) *hlo.Value { return b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), v), []int64{p.n}) }
	end := b.Add(p.tl, p.tl)
	l1, l2 := p.atEnd(la, end), p.atEnd(la, b.Sub(end, k(1)))
	m := b.Max(l1, l2)
	m = b.Select(b.Compare(hlo.EQ, m, splat(b, m, math.Inf(-1))), splat(b, m, 0), m)
	ll := b.Add(plog(b, b.Add(pexp(b, b.Sub(l1, m)), pexp(b, b.Sub(l2, m)))), m)
	ll = b.Select(b.Compare(hlo.EQ, p.tl, k(0)), p.atEnd(la, k(0)), ll)
	return b.Neg(ll)
}

// ctcLossRule is _ctc_loss(log_probs, targets, input_lengths,
// target_lengths, blank, zero_infinity) -> (neg_log_likelihood, log_alpha),
// with int[] or tensor lengths.
func ctcLossRule(c *Ctx) ([]*hlo.Value, error) {
	p, err := newCTC(c, 0, c.Int(4, 0), c.Bool(5, false))
	if err != nil {
		return nil, err
	}
	la := p.alpha(p.labelProbs())
	return []*hlo.Value{p.nll(la), c.B.Transpose(la, 1, 0, 2)}, nil
}

func init() {
	def("aten::_ctc_loss", ctcLossRule, "aten::_ctc_loss.out").Needs = Needs{Uploads: true}
	def("aten::_ctc_loss.Tensor", ctcLossRule, "aten::_ctc_loss.Tensor_out").Needs = Needs{HostArgs: []int{2, 3}, Uploads: true}
}
