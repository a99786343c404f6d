package dispatch

import (
	"math"
	"slices"

	"torchtpu/hlo"
)

// nativeMHA is _native_multi_head_attention(query, key, value, embed_dim,
// num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, need_weights,
// average_attn_weights, mask_type) -> (output, weights): the inference fast
// path of nn.MultiheadAttention and nn.TransformerEncoderLayer, computed as
// CPU's kernel does. The in-projection splits qkv_weight in three; queries are
// (x·Wqᵀ + bq) / sqrt(head dim); the mask, read as booleans (nonzero, so a
// float mask's -inf too), marks the keys left out
// (mask_type 0: [L, S]; 1: a key padding mask [B, S]; 2: any shape that
// broadcasts to [B, heads, L, S]), so a row left with no key is NaN, as on
// CPU. The weights are the softmax, averaged over the heads when asked. The
// shim's kernel (csrc/attention.cpp) always asks for them and drops them when
// need_weights is false, since CPU then returns an undefined tensor. Other
// inputs (other ranks or shapes, half types) run on the CPU, which also gives
// CPU's errors.
func nativeMHA(c *Ctx) ([]*hlo.Value, error) {
	qm, km, vm := c.Meta(0), c.Meta(1), c.Meta(2)
	d := qm.DType
	if d != Float32 && d != Float64 || qm.Rank() != 3 || !slices.Equal(qm.Sizes, km.Sizes) || !slices.Equal(qm.Sizes, vm.Sizes) ||
		km.DType != d || vm.DType != d {
		return nil, ErrRunOnCPU
	}
	bsz, l, e := qm.Sizes[0], qm.Sizes[1], qm.Sizes[2]
	heads := c.Int(4, 1)
	if e != c.Int(3, 0) || heads <= 0 || e%heads != 0 || !slices.Equal(c.Meta(5).Sizes, []int64{3 * e, e}) ||
		!slices.Equal(c.Meta(6).Sizes, []int64{3 * e}) {
		return nil, ErrRunOnCPU
	}
	dh := e / heads
	b, el := c.B, d.Elem()
	w, bias := c.T(5), c.T(6)
	// proj is x·W[i]ᵀ + bias[i] for the i-th third of the in-projection, as [B, heads, L, dh].
	proj := func(x *hlo.Value, i int64) *hlo.Value {
		wi := b.Slice(w, []int64{i * e, 0}, []int64{(i + 1) * e, e}, []int64{1, 1})
		bi := b.Slice(bias, []int64{i * e}, []int64{(i + 1) * e}, []int64{1})
		y := b.DotGeneral(x, wi, nil, nil, []int64{2}, []int64{1})
		y = b.Add(y, b.BroadcastInDim(bi, y.T.Shape, []int64{2}))
		return b.Transpose(b.Reshape(y, bsz, l, heads, dh), 0, 2, 1, 3)
	}
	q := proj(c.T(0), 0)
	q = b.Div(q, full(b, d, q.T.Shape, math.Sqrt(float64(dh))))
	k, v := proj(c.T(1), 1), proj(c.T(2), 2)
	bd := []int64{0, 1}
	sc := b.DotGeneral(q, k, bd, bd, []int64{3}, []int64{3}) // [B, heads, L, S]
	if c.Has(9) {
		mm := c.Meta(9)
		if !c.Has(12) || mm.DType.IsComplex() {
			return nil, ErrRunOnCPU
		}
		m := c.T(9)
		if mm.DType != Bool {
			// CPU reads any mask as booleans: nonzero leaves the key out (a float mask's -inf and 0 alike).
			m = b.Compare(hlo.NE, m, full(b, mm.DType, mm.Sizes, 0))
		}
		switch c.Int(12, -1) {
		case 0:
			if !slices.Equal(mm.Sizes, []int64{l, l}) {
				return nil, ErrRunOnCPU
			}
			m = b.BroadcastInDim(m, sc.T.Shape, []int64{2, 3})
		case 1:
			if !slices.Equal(mm.Sizes, []int64{bsz, l}) {
				return nil, ErrRunOnCPU
			}
			m = b.BroadcastInDim(m, sc.T.Shape, []int64{0, 3})
		case 2:
			if _, err := BroadcastShapes(mm.Sizes, sc.T.Shape); err != nil || len(mm.Sizes) > 4 {
				return nil, ErrRunOnCPU
			}
			m = b.BroadcastTo(m, sc.T.Shape)
		default:
			return nil, ErrRunOnCPU
		}
		sc = b.Select(m, full(b, d, sc.T.Shape, math.Inf(-1)), sc)
	}
	mx := b.Reduce(sc, b.Scalar(el, math.Inf(-1)), hlo.ReduceMax, 3)
	p := b.Exp(b.Sub(sc, b.BroadcastInDim(mx, sc.T.Shape, []int64{0, 1, 2})))
	sum := b.Reduce(p, b.Scalar(el, 0), hlo.ReduceSum, 3)
	p = b.Div(p, b.BroadcastInDim(sum, p.T.Shape, []int64{0, 1, 2}))
	ctx := b.DotGeneral(p, v, bd, bd, []int64{3}, []int64{2}) // [B, heads, L, dh]
	ctx = b.Reshape(b.Transpose(ctx, 0, 2, 1, 3), bsz, l, e)
	out := b.DotGeneral(ctx, c.T(7), nil, nil, []int64{2}, []int64{1})
	out = b.Add(out, b.BroadcastInDim(c.T(8), out.T.Shape, []int64{2}))
	weights := p
	if c.Bool(11, true) {
		weights = b.Div(b.Reduce(p, b.Scalar(el, 0), hlo.ReduceSum, 1), full(b, d, []int64{bsz, l, l}, float64(heads)))
	}
	return []*hlo.Value{out, weights}, nil
}

func init() {
	def("aten::_native_multi_head_attention", nativeMHA, "aten::_native_multi_head_attention.out")
}
