package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// aaMatrix returns the [out, in] antialiased bilinear (triangle filter)
// interpolation matrix of one axis, built on the device the way CPU's
// _compute_weights_aa forms it: for output i the filter is centred at
// scale*(i+0.5), widened by the scale when downsampling, limited to the
// input elements [xmin, xmin+xsize) and normalized to sum to one.
func aaMatrix(b *hlo.Builder, e hlo.Elem, in, out int64, align bool, scale float64, hasScale bool) *hlo.Value {
	t, ft := hlo.T(hlo.S64, out, in), hlo.T(e, out, in)
	cf := func(v float64) *hlo.Value { return b.Constant(ft, v) }
	ci := func(v int64) *hlo.Value { return b.ConstantInt(t, v) }
	sc := srcScale(in, out, align, scale, hasScale)
	if e == hlo.F32 {
		sc = float64(float32(sc))
	}
	support, invscale := 1.0, 1.0
	if sc >= 1 {
		support, invscale = sc, 1/sc
	}
	o := b.Convert(b.Iota(t, 0), e)
	j := b.Iota(t, 1)
	center := b.Mul(cf(sc), b.Add(o, cf(0.5)))
	xmin := b.Max(b.Convert(b.Add(b.Sub(center, cf(support)), cf(0.5)), hlo.S64), ci(0))
	xmax := b.Min(b.Convert(b.Add(b.Add(center, cf(support)), cf(0.5)), hlo.S64), ci(in))
	inside := b.And(b.Compare(hlo.GE, j, xmin), b.Compare(hlo.LT, j, xmax))
	x := b.Abs(b.Mul(b.Add(b.Sub(b.Convert(j, e), center), cf(0.5)), cf(invscale)))
	w := b.Select(b.And(inside, b.Compare(hlo.LT, x, cf(1))), b.Sub(cf(1), x), cf(0))
	total := b.BroadcastInDim(b.Reduce(w, b.Scalar(e, 0), hlo.ReduceSum, 1), []int64{out, in}, []int64{0})
	zero := b.Compare(hlo.EQ, total, cf(0))
	return b.Select(zero, w, b.Div(w, b.Select(zero, cf(1), total)))
}

// aaMatrices returns the height and width matrices of _upsample_bilinear2d_aa;
// align_corners and the scales follow the argument at corner.
func aaMatrices(c *Ctx, e hlo.Elem, in, out []int64, corner int) (*hlo.Value, *hlo.Value) {
	align := c.Bool(corner, false)
	mh := aaMatrix(c.B, e, in[2], out[0], align, c.Float(corner+1, 0), c.Has(corner+1))
	mw := aaMatrix(c.B, e, in[3], out[1], align, c.Float(corner+2, 0), c.Has(corner+2))
	return mh, mw
}

var aaSpec = upsampleSpec{"_upsample_bilinear2d_aa", interpLinear, 2, true}

// upsampleBilinearAA is _upsample_bilinear2d_aa(self, output_size,
// align_corners, scales_h, scales_w): the width pass, then the height pass,
// each a matmul with its axis's weight matrix.
func upsampleBilinearAA(c *Ctx) ([]*hlo.Value, error) {
	in := c.Meta(0)
	outSize := c.Ints(1, nil)
	if err := aaSpec.check(in.Sizes, outSize); err != nil {
		return nil, err
	}
	if in.DType == Uint8 {
		return []*hlo.Value{upsampleUint8(c, outSize, c.Bool(2, false), true, 3)}, nil
	}
	if !in.DType.IsFloat() {
		return nil, notImplemented("compute_index_ranges_weights", in.DType)
	}
	b, e := c.B, accumElem(in.DType)
	mh, mw := aaMatrices(c, e, in.Sizes, outSize, 2)
	x := b.DotGeneral(b.Convert(c.T(0), e), mw, nil, nil, []int64{3}, []int64{1}) // [N, C, H, Wo]
	x = b.DotGeneral(x, mh, nil, nil, []int64{2}, []int64{1})                     // [N, C, Wo, Ho]
	return []*hlo.Value{b.Convert(b.Transpose(x, 0, 1, 3, 2), in.DType.Elem())}, nil
}

// upsampleBilinearAABackward is _upsample_bilinear2d_aa_backward(grad_output,
// output_size, input_size, align_corners, scales_h, scales_w): the gradient
// times each weight matrix transposed.
func upsampleBilinearAABackward(c *Ctx) ([]*hlo.Value, error) {
	gm := c.Meta(0)
	outSize, inSize := c.Ints(1, nil), c.Ints(2, nil)
	if err := aaSpec.check(inSize, outSize); err != nil {
		return nil, err
	}
	want := append([]int64{inSize[0], inSize[1]}, outSize...)
	if !slices.Equal(gm.Sizes, want) {
		return nil, Errorf("Expected grad_output to have the same shape as output; output.size = %s but got grad_output.size = %s",
			shapeString(want), shapeString(gm.Sizes))
	}
	b, e := c.B, accumElem(gm.DType)
	mh, mw := aaMatrices(c, e, inSize, outSize, 3)
	g := b.DotGeneral(b.Convert(c.T(0), e), mh, nil, nil, []int64{2}, []int64{0}) // [N, C, Wo, H]
	g = b.DotGeneral(g, mw, nil, nil, []int64{2}, []int64{0})                     // [N, C, H, W]
	return []*hlo.Value{b.Convert(g, gm.DType.Elem())}, nil
}

func init() {
	def("aten::_upsample_bilinear2d_aa", upsampleBilinearAA, "aten::_upsample_bilinear2d_aa.out")
	def("aten::_upsample_bilinear2d_aa_backward", upsampleBilinearAABackward, "aten::_upsample_bilinear2d_aa_backward.grad_input")
}
