package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// attnArgs are the pieces of _scaled_dot_product_flash_attention_for_cpu and
// its backward: queries [..., L, E], keys [..., S, E], values [..., S, Ev].
type attnArgs struct {
	q, k, v *hlo.Value // in the compute dtype
	d       DType      // compute dtype (float32 for half types)
	batch   []int64    // leading dimensions, shared by q, k and v
	group   int64      // query heads per key and value head (grouped-query attention), 1 without
	l, s    int64
	scale   float64
	bias    *hlo.Value // [..., L, S] additive mask (0 or -inf for bools, causal), or nil
}

func seq(n int) []int64 {
	r := make([]int64, n)
	for i := range r {
		r[i] = int64(i)
	}
	return r
}

// readAttn reads q, k, v at qi, qi+1, qi+2, is_causal at causal, attn_mask
// at mask and scale at scale. With padded set, keys and values held padded
// along their sequence dimension (a growing key/value cache, padded.go) are
// read so, and the keys past their size are masked out.
func (c *Ctx) readAttn(qi, causal, mask, scale int, padded bool) (*attnArgs, error) {
	qm, km, vm := c.Meta(qi), c.Meta(qi+1), c.Meta(qi+2)
	r := qm.Rank()
	if r < 2 || km.Rank() != r || vm.Rank() != r {
		return nil, Errorf("scaled_dot_product_attention: expected query, key and value of one rank >= 2, got %s, %s, %s",
			shapeString(qm.Sizes), shapeString(km.Sizes), shapeString(vm.Sizes))
	}
	if !qm.DType.IsFloat() || km.DType != qm.DType || vm.DType != qm.DType {
		return nil, Errorf("scaled_dot_product_attention: expected query, key and value of one floating dtype")
	}
	batch := qm.Sizes[:r-2]
	group := int64(1)
	if r >= 3 && km.Sizes[r-3] != qm.Sizes[r-3] && km.Sizes[r-3] > 0 && qm.Sizes[r-3]%km.Sizes[r-3] == 0 &&
		vm.Sizes[r-3] == km.Sizes[r-3] {
		group = qm.Sizes[r-3] / km.Sizes[r-3] // enable_gqa: the heads dimension is the third from last
	}
	for i := range batch {
		if i == r-3 && group > 1 {
			continue
		}
		if km.Sizes[i] != batch[i] || vm.Sizes[i] != batch[i] {
			return nil, Errorf("scaled_dot_product_attention: batch dimensions of query %s, key %s and value %s differ",
				shapeString(qm.Sizes), shapeString(km.Sizes), shapeString(vm.Sizes))
		}
	}
	if km.Sizes[r-1] != qm.Sizes[r-1] || km.Sizes[r-2] != vm.Sizes[r-2] {
		return nil, Errorf("scaled_dot_product_attention: key %s does not fit query %s and value %s",
			shapeString(km.Sizes), shapeString(qm.Sizes), shapeString(vm.Sizes))
	}
	b, d := c.B, opmathType(qm.DType)
	a := &attnArgs{d: d, batch: batch, group: group, l: qm.Sizes[r-2], s: km.Sizes[r-2]}
	a.q = b.Convert(c.T(qi), d.Elem())
	a.scale = 1 / math.Sqrt(float64(qm.Sizes[r-1]))
	if c.Has(scale) {
		a.scale = c.Float(scale, a.scale)
	}
	// A mask goes with padded keys and values when it is held padded along
	// its last dimension to their capacity (made from a padded mask by
	// elementwise ops, engine/pad_ops.go).
	var mp *Padded
	if padded && c.Has(mask) {
		mc, mok := c.paddedCap(mask, 0, c.Meta(mask).Rank()-1)
		kc, kok := c.paddedCap(qi+1, 0, r-2)
		padded = mok && kok && mc == kc
	}
	if kp, vp, ok := c.paddedKV(qi, r-2, padded); ok {
		a.k, a.v, a.s = b.Convert(kp.V, d.Elem()), b.Convert(vp.V, d.Elem()), kp.Cap
		ls := append(append([]int64{}, batch...), a.l, a.s)
		a.bias = b.Select(ValidMask(b, ls, r-1, kp.Size), full(b, d, ls, 0), full(b, d, ls, math.Inf(-1)))
		if c.Has(mask) {
			m, _ := c.readPadded(mask, 0, c.Meta(mask).Rank()-1)
			mp = &m
		}
	} else {
		a.k, a.v = b.Convert(c.T(qi+1), d.Elem()), b.Convert(c.T(qi+2), d.Elem())
	}
	a.k, a.v = a.repeatHeads(b, a.k), a.repeatHeads(b, a.v)
	ls := append(append([]int64{}, batch...), a.l, a.s)
	if c.Has(mask) {
		mm := c.Meta(mask)
		var mv *hlo.Value
		if mp != nil {
			mm.Sizes = mp.V.T.Shape
			mv = mp.V
		} else {
			mv = c.T(mask)
		}
		if mm.DType == Bool {
			mv = b.Select(mv, full(b, d, mm.Sizes, 0), full(b, d, mm.Sizes, math.Inf(-1)))
		} else {
			mv = b.Convert(mv, d.Elem())
		}
		if _, err := BroadcastShapes(mm.Sizes, ls); err != nil {
			return nil, Errorf("scaled_dot_product_attention: attn_mask %s does not broadcast to %s", shapeString(mm.Sizes), shapeString(ls))
		}
		if mp != nil {
			a.bias = b.Add(b.BroadcastTo(mv, ls), a.bias)
		} else {
			a.bias = b.BroadcastTo(mv, ls)
		}
	}
	if c.Bool(causal, false) {
		allowed := b.Compare(hlo.LE, b.Iota(hlo.T(hlo.S64, ls...), r-1), b.Iota(hlo.T(hlo.S64, ls...), r-2))
		cm := b.Select(allowed, full(b, d, ls, 0), full(b, d, ls, math.Inf(-1)))
		if a.bias == nil {
			a.bias = cm
		} else {
			a.bias = b.Add(a.bias, cm)
		}
	}
	return a, nil
}

// repeatHeads gives keys or values x of grouped-query attention the query's
// heads, each repeated for its group of query heads (repeat_interleave).
func (a *attnArgs) repeatHeads(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if a.group == 1 {
		return x
	}
	s := x.T.Shape
	h := len(s) - 3
	grouped := append(append(append([]int64{}, s[:h+1]...), a.group), s[h+1:]...)
	dims := seq(len(s))
	for i := h + 1; i < len(s); i++ {
		dims[i]++
	}
	out := append([]int64{}, s...)
	out[h] *= a.group
	return b.Reshape(b.BroadcastInDim(x, grouped, dims), out...)
}

// sumHeads sums a gradient x with the query's heads over each group of query
// heads, into the key and value heads (the inverse of repeatHeads).
func (a *attnArgs) sumHeads(b *hlo.Builder, x *hlo.Value) *hlo.Value {
	if a.group == 1 {
		return x
	}
	s := x.T.Shape
	h := len(s) - 3
	grouped := append(append(append([]int64{}, s[:h]...), s[h]/a.group, a.group), s[h+1:]...)
	return b.Reduce(b.Reshape(x, grouped...), b.Scalar(x.T.Elem, 0), hlo.ReduceSum, int64(h+1))
}

// paddedKV returns the keys and values at qi+1 and qi+2 in padded form along
// dim when allowed and both are held so with one capacity (they then have
// one size).
func (c *Ctx) paddedKV(qi, dim int, allowed bool) (k, v Padded, ok bool) {
	if !allowed {
		return k, v, false
	}
	kc, kok := c.paddedCap(qi+1, 0, dim)
	vc, vok := c.paddedCap(qi+2, 0, dim)
	if !kok || !vok || kc != vc {
		return k, v, false
	}
	k, _ = c.readPadded(qi+1, 0, dim)
	v, _ = c.readPadded(qi+2, 0, dim)
	return k, v, true
}

// scores returns the scaled, masked scores q k^T * scale + mask [..., L, S].
func (a *attnArgs) scores(b *hlo.Builder) *hlo.Value {
	nb := int64(len(a.batch))
	bd := seq(len(a.batch))
	sc := b.DotGeneral(a.q, a.k, bd, bd, []int64{nb + 1}, []int64{nb + 1})
	sc = b.Mul(sc, full(b, a.d, sc.T.Shape, a.scale))
	if a.bias != nil {
		sc = b.Add(sc, a.bias)
	}
	return sc
}

// rowDims maps a [..., L] value into [..., L, S].
func (a *attnArgs) rowDims() []int64 { return seq(len(a.batch) + 1) }

// expScores returns exp(scores - rowmax) [..., L, S], its row sums and
// logsumexp [..., L], as CPU's flash kernel forms them, and where each row
// reaches its maximum ([..., L, S], boolean).
func (a *attnArgs) expScores(b *hlo.Builder) (p, sum, lse, top *hlo.Value) {
	nb := int64(len(a.batch))
	e := a.d.Elem()
	sc := a.scores(b)
	mx := b.Reduce(sc, b.Scalar(e, math.Inf(-1)), hlo.ReduceMax, nb+1)
	// A fully masked row keeps max -inf; shift by 0 there so exp gives 0.
	fin := b.Select(b.IsFinite(mx), mx, full(b, a.d, mx.T.Shape, 0))
	p = b.Exp(b.Sub(sc, b.BroadcastInDim(fin, sc.T.Shape, a.rowDims())))
	sum = b.Reduce(p, b.Scalar(e, 0), hlo.ReduceSum, nb+1)
	top = b.Compare(hlo.EQ, sc, b.BroadcastInDim(mx, sc.T.Shape, a.rowDims()))
	return p, sum, b.Add(b.Log(sum), fin), top
}

// sdpaFlashCPU is _scaled_dot_product_flash_attention_for_cpu(query, key,
// value, dropout_p, is_causal, *, attn_mask, scale) -> (output, logsumexp).
func sdpaFlashCPU(c *Ctx) ([]*hlo.Value, error) {
	if c.Float(3, 0) != 0 {
		return nil, Errorf("scaled_dot_product_attention_flash_attention: Currently do not support dropout > 0")
	}
	a, err := c.readAttn(0, 4, 5, 6, true)
	if err != nil {
		return nil, err
	}
	b := c.B
	p, sum, lse, _ := a.expScores(b)
	if in := c.Meta(0).DType; in != a.d {
		// CPU's kernel rounds the exponentials to the input's half type before the matmul.
		p = b.Convert(b.Convert(p, in.Elem()), a.d.Elem())
	}
	bd := seq(len(a.batch))
	nb := int64(len(a.batch))
	out := b.DotGeneral(p, a.v, bd, bd, []int64{nb + 1}, []int64{nb})
	// CPU multiplies by the reciprocal of the row sum; a fully masked row (sum 0) gives zeros.
	zero := full(b, a.d, sum.T.Shape, 0)
	inv := b.Select(b.Compare(hlo.GT, sum, zero), b.Div(full(b, a.d, sum.T.Shape, 1), sum), zero)
	out = b.Mul(out, b.BroadcastInDim(inv, out.T.Shape, a.rowDims()))
	return []*hlo.Value{b.Convert(out, c.Meta(0).DType.Elem()), cpuOrder(b, a, b.Convert(lse, a.d.Elem()))}, nil
}

// cpuOrder puts a [B, H, L, E] gradient (or the [B, H, L] logsumexp) of a 4-D query in the memory order
// CPU's flash kernels give them, [B, L, H, E] ([B, L, H]); the forward output keeps [B, H, L, E]. The
// shim's kernels (csrc/attention.cpp) hand them to PyTorch transposed back, so sizes and strides match
// CPU's, which compiled graphs rely on when they view the results.
func cpuOrder(b *hlo.Builder, a *attnArgs, v *hlo.Value) *hlo.Value {
	if len(a.batch) != 2 {
		return v
	}
	if v.T.Rank() == 4 {
		return b.Transpose(v, 0, 2, 1, 3)
	}
	return b.Transpose(v, 0, 2, 1)
}

// sdpaFlashCPUBackward is _scaled_dot_product_flash_attention_for_cpu_backward
// (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *,
// attn_mask, scale) -> (grad_query, grad_key, grad_value). The weights are
// recomputed from the scores, normalized by their own row sums, and the
// softmax correction is the row sum of weights times their gradients, all
// from one rounding of the scores. CPU's kernel shifts by the forward's
// logsumexp and corrects with the forward's output, which its scores match
// bit for bit; a program's scores may differ from the forward's in the last
// bit, and where the softmax saturates (scores of 1e3 and more) that made
// the largest weight 1 ± 1e-4 and the gradients of q and k 1e-3 where they
// are 1e-12.
func sdpaFlashCPUBackward(c *Ctx) ([]*hlo.Value, error) {
	if c.Float(6, 0) != 0 {
		return nil, Errorf("scaled_dot_product_attention_flash_attention_backward: Currently do not support dropout > 0")
	}
	a, err := c.readAttn(1, 7, 8, 9, false)
	if err != nil {
		return nil, err
	}
	b := c.B
	e, sum, _, top := a.expScores(b)
	// A fully masked row (sum 0) has weights 0.
	zero := full(b, a.d, sum.T.Shape, 0)
	inv := b.Select(b.Compare(hlo.GT, sum, zero), b.Div(full(b, a.d, sum.T.Shape, 1), sum), zero)
	p := b.Mul(e, b.BroadcastInDim(inv, e.T.Shape, a.rowDims()))
	bd := seq(len(a.batch))
	nb := int64(len(a.batch))
	g := b.Convert(c.T(0), a.d.Elem())
	dv := b.DotGeneral(p, g, bd, bd, []int64{nb}, []int64{nb})           // [..., S, Ev]
	dp := b.DotGeneral(g, a.v, bd, bd, []int64{nb + 1}, []int64{nb + 1}) // [..., L, S]
	// The correction p * (dp - rowsum(p * dp)) does not change when dp moves by a constant per row, as the
	// weights sum to 1; measured from dp at the row's largest score, a saturated row's correction is 0
	// where its weight is 1 whatever that weight's last bit (XLA's exp and divide give 1 - 2^-24 on some
	// hosts, which left q and k gradients of 5e-4 where they are 1e-12).
	at := b.Reduce(b.Select(top, dp, full(b, a.d, dp.T.Shape, math.Inf(-1))), b.Scalar(a.d.Elem(), math.Inf(-1)),
		hlo.ReduceMax, nb+1)
	at = b.Select(b.IsFinite(at), at, full(b, a.d, at.T.Shape, 0))
	dp = b.Sub(dp, b.BroadcastInDim(at, dp.T.Shape, a.rowDims()))
	rowDot := b.Reduce(b.Mul(p, dp), b.Scalar(a.d.Elem(), 0), hlo.ReduceSum, nb+1) // [..., L]
	ds := b.Mul(p, b.Sub(dp, b.BroadcastInDim(rowDot, dp.T.Shape, a.rowDims())))
	ds = b.Mul(ds, full(b, a.d, ds.T.Shape, a.scale))
	dq := b.DotGeneral(ds, a.k, bd, bd, []int64{nb + 1}, []int64{nb}) // [..., L, E]
	dk := b.DotGeneral(ds, a.q, bd, bd, []int64{nb}, []int64{nb})     // [..., S, E]
	dk, dv = a.sumHeads(b, dk), a.sumHeads(b, dv)
	el := c.Meta(1).DType.Elem()
	return []*hlo.Value{cpuOrder(b, a, b.Convert(dq, el)), cpuOrder(b, a, b.Convert(dk, el)), cpuOrder(b, a, b.Convert(dv, el))}, nil
}

func init() {
	def("aten::_scaled_dot_product_flash_attention_for_cpu", sdpaFlashCPU, "")
	def("aten::_scaled_dot_product_flash_attention_for_cpu_backward", sdpaFlashCPUBackward, "")
}
