package dispatch

import (
	"math"

	"torchtpu/hlo"
)

// uint8Weights returns the [out, in] fixed-point weights of one axis of
// CPU's uint8 bilinear kernels (plain and antialiased), and their precision
// in bits. Like those kernels, it forms the triangle filter around each
// output's centre in float64, normalizes it over the input elements it
// covers, and rounds each weight to an integer of at most 15 bits at the
// largest precision (up to 22 bits) that keeps the largest weight in range.
func uint8Weights(in, out int64, align, antialias bool, scale float64, hasScale bool) ([]float64, int) {
	sc := srcScale(in, out, align, scale, hasScale)
	support, invscale := 1.0, 1.0
	if antialias && sc >= 1 {
		support, invscale = sc, 1/sc
	}
	w := make([]float64, out*in)
	largest := 0.0
	for o := int64(0); o < out; o++ {
		center := sc * (float64(o) + 0.5)
		if align && !antialias {
			center = sc*float64(o) + 0.5
		}
		lo := max(int64(center-support+0.5), 0)
		hi := min(int64(center+support+0.5), in)
		row := w[o*in : (o+1)*in]
		total := 0.0
		for j := lo; j < hi; j++ {
			row[j] = max(0, 1-math.Abs((float64(j)-center+0.5)*invscale))
			total += row[j]
		}
		for j := lo; j < hi && total != 0; j++ {
			row[j] /= total
			largest = max(largest, row[j])
		}
	}
	precision := 0
	for precision < 22 && int64(0.5+largest*float64(int64(1)<<(precision+1))) < 1<<15 {
		precision++
	}
	for i, v := range w {
		w[i] = float64(int64(0.5 + v*float64(int64(1)<<precision)))
	}
	return w, precision
}

// uint8Pass interpolates dimension dim of the int32 image x with the
// fixed-point weights of that axis, rounding and clamping the result to
// [0, 255] as CPU's uint8 kernels do after each pass.
func uint8Pass(b *hlo.Builder, x *hlo.Value, dim int, out int64, align, antialias bool, scale float64, hasScale bool) *hlo.Value {
	in := x.T.Shape[dim]
	w, p := uint8Weights(in, out, align, antialias, scale, hasScale)
	m := b.Convert(b.DenseF64(w, out, in), hlo.S32)
	y := b.DotGeneral(x, m, nil, nil, []int64{int64(dim)}, []int64{1}) // the axis moves last
	y = b.ShiftRightArithmetic(b.Add(y, b.ConstantInt(y.T, int64(1)<<max(p-1, 0))), b.ConstantInt(y.T, int64(p)))
	y = b.Clamp(b.ConstantInt(y.T, 0), y, b.ConstantInt(y.T, 255))
	perm := make([]int64, 0, y.T.Rank())
	for d := 0; d < y.T.Rank()-1; d++ {
		if d == dim {
			perm = append(perm, int64(y.T.Rank()-1))
		}
		perm = append(perm, int64(d))
	}
	if dim == y.T.Rank()-1 {
		perm = append(perm, int64(dim))
	}
	return b.Transpose(y, perm...)
}

// upsampleUint8 is CPU's uint8 bilinear interpolation of an [N, C, H, W]
// image: the width pass, then the height pass, each skipped when its size
// does not change, with a uint8 result between them.
func upsampleUint8(c *Ctx, outSize []int64, align, antialias bool, scaleArg int) *hlo.Value {
	b := c.B
	x := b.Convert(c.T(0), hlo.S32)
	for _, d := range []int{3, 2} {
		if x.T.Shape[d] != outSize[d-2] {
			x = uint8Pass(b, x, d, outSize[d-2], align, antialias, c.Float(scaleArg+d-2, 0), c.Has(scaleArg+d-2))
		}
	}
	return b.Convert(x, hlo.U8)
}
