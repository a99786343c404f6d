package dispatch

import (
	"fmt"
	"slices"

	"torchtpu/hlo"
)

// interpKind names an upsampling method.
type interpKind int

const (
	interpNearest interpKind = iota
	interpNearestExact
	interpLinear
	interpCubic
)

// upsampleSpec describes one upsample op: its method, its spatial rank and
// whether it takes align_corners.
type upsampleSpec struct {
	name   string
	kind   interpKind
	rank   int
	corner bool
}

// scaleArgs returns where the optional per-dimension scale arguments start:
// after output_size (and input_size for the backward), and align_corners.
func (s upsampleSpec) scaleArgs(backward bool) int {
	i := 2
	if backward {
		i = 3
	}
	if s.corner {
		i++
	}
	return i
}

// srcScale is PyTorch's area_pixel_compute_scale: the step in input
// coordinates per output element.
func srcScale(in, out int64, align bool, scale float64, hasScale bool) float64 {
	if align {
		if out > 1 {
			return float64(in-1) / float64(out-1)
		}
		return 0
	}
	if hasScale && scale > 0 {
		return 1 / scale
	}
	return float64(in) / float64(out)
}

// interpMatrix returns the [out, in] matrix, in element type e, whose row o
// holds the weights output element o takes from each input element along
// one axis.
func interpMatrix(b *hlo.Builder, e hlo.Elem, k interpKind, in, out int64, align bool, scale float64, hasScale bool) *hlo.Value {
	t := hlo.T(hlo.S64, out, in)
	ft := hlo.T(e, out, in)
	o, i := b.Convert(b.Iota(t, 0), e), b.Iota(t, 1)
	cf := func(v float64) *hlo.Value { return b.Constant(ft, v) }
	ci := func(v int64) *hlo.Value { return b.ConstantInt(t, v) }
	one := func(p *hlo.Value) *hlo.Value { return b.Select(p, cf(1), cf(0)) }
	clampIdx := func(v *hlo.Value) *hlo.Value { return b.Clamp(ci(0), v, ci(in-1)) }
	switch k {
	case interpNearest, interpNearestExact:
		idx := b.BroadcastInDim(nearestIndex(b, k, in, out, scale, hasScale), []int64{out, in}, []int64{0})
		return one(b.Compare(hlo.EQ, i, idx))
	case interpLinear:
		sc := cf(srcScale(in, out, align, scale, hasScale))
		var src *hlo.Value
		if align {
			src = b.Mul(sc, o)
		} else {
			src = b.Max(b.Sub(b.Mul(sc, b.Add(o, cf(0.5))), cf(0.5)), cf(0))
		}
		i0 := b.Min(b.Convert(src, hlo.S64), ci(in-1))
		i1 := b.Min(b.Add(i0, ci(1)), ci(in-1))
		l1 := b.Sub(src, b.Convert(i0, e))
		l0 := b.Sub(cf(1), l1)
		return b.Add(b.Mul(l0, one(b.Compare(hlo.EQ, i, i0))), b.Mul(l1, one(b.Compare(hlo.EQ, i, i1))))
	}
	// Cubic convolution with A = -0.75 over the four neighbours, indices
	// clamped to the edge.
	sc := cf(srcScale(in, out, align, scale, hasScale))
	var src *hlo.Value
	if align {
		src = b.Mul(sc, o)
	} else {
		src = b.Sub(b.Mul(sc, b.Add(o, cf(0.5))), cf(0.5))
	}
	fl := b.Floor(src)
	x := b.Sub(src, fl)
	base := b.Convert(fl, hlo.S64)
	a := cf(-0.75)
	near := func(x *hlo.Value) *hlo.Value { // ((A+2)x - (A+3))x^2 + 1
		return b.Add(b.Mul(b.Sub(b.Mul(b.Add(a, cf(2)), x), b.Add(a, cf(3))), b.Mul(x, x)), cf(1))
	}
	far := func(x *hlo.Value) *hlo.Value { // ((Ax - 5A)x + 8A)x - 4A
		t := b.Sub(b.Mul(a, x), b.Mul(cf(5), a))
		t = b.Add(b.Mul(t, x), b.Mul(cf(8), a))
		return b.Sub(b.Mul(t, x), b.Mul(cf(4), a))
	}
	ws := []*hlo.Value{far(b.Add(x, cf(1))), near(x), near(b.Sub(cf(1), x)), far(b.Sub(cf(2), x))}
	var m *hlo.Value
	for j, w := range ws {
		idx := clampIdx(b.Add(base, ci(int64(j-1))))
		term := b.Mul(w, one(b.Compare(hlo.EQ, i, idx)))
		if m == nil {
			m = term
		} else {
			m = b.Add(m, term)
		}
	}
	return m
}

// nearestIndex returns, as an s64 [out] vector, the input element each
// output element copies (PyTorch's nearest_idx, computed in float32).
func nearestIndex(b *hlo.Builder, k interpKind, in, out int64, scale float64, hasScale bool) *hlo.Value {
	t := hlo.T(hlo.F32, out)
	if k == interpNearest && out == in {
		return b.Iota(hlo.T(hlo.S64, out), 0)
	}
	sc := float64(in) / float64(out)
	if hasScale && scale > 0 {
		sc = 1 / scale
	}
	src := b.Iota(t, 0)
	if k == interpNearestExact {
		src = b.Add(src, b.Constant(t, 0.5))
	}
	idx := b.Convert(b.Floor(b.Mul(src, b.Constant(t, sc))), hlo.S64)
	return b.Min(idx, b.ConstantInt(hlo.T(hlo.S64, out), in-1))
}

// upsampleSizes reads and checks the output (and input) sizes of an
// upsample op whose spatial rank is s.rank.
func (s upsampleSpec) check(inSizes, outSize []int64) error {
	if len(outSize) != s.rank {
		return Errorf("It is expected output_size equals to %d, but got size %d", s.rank, len(outSize))
	}
	if len(inSizes) != s.rank+2 {
		return Errorf("It is expected input_size equals to %d, but got size %d", s.rank+2, len(inSizes))
	}
	for _, v := range inSizes[2:] {
		if v <= 0 {
			return Errorf("Input and output sizes should be greater than 0, but got input (%s) and output (%s)",
				joinInts(inSizes[2:]), joinInts(outSize))
		}
	}
	for _, v := range outSize {
		if v <= 0 {
			return Errorf("Input and output sizes should be greater than 0, but got input (%s) and output (%s)",
				joinInts(inSizes[2:]), joinInts(outSize))
		}
	}
	return nil
}

func joinInts(xs []int64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(x)
	}
	return s
}

// matrices returns the interpolation matrix of each spatial axis.
func (s upsampleSpec) matrices(c *Ctx, e hlo.Elem, in, out []int64, backward bool) []*hlo.Value {
	align := s.corner && c.Bool(s.scaleArgs(backward)-1, false)
	first := s.scaleArgs(backward)
	ms := make([]*hlo.Value, s.rank)
	for d := 0; d < s.rank; d++ {
		ms[d] = interpMatrix(c.B, e, s.kind, in[d+2], out[d], align, c.Float(first+d, 0), c.Has(first+d))
	}
	return ms
}

// forward is the upsample op: the input times each axis's matrix in turn.
func (s upsampleSpec) forward(c *Ctx) ([]*hlo.Value, error) {
	in := c.Meta(0)
	outSize := c.Ints(1, nil)
	if err := s.check(in.Sizes, outSize); err != nil {
		return nil, err
	}
	if in.DType == Uint8 && s.kind == interpLinear && s.rank == 2 {
		first := s.scaleArgs(false)
		return []*hlo.Value{upsampleUint8(c, outSize, c.Bool(first-1, false), false, first)}, nil
	}
	if in.DType == Uint8 && s.name == "upsample_bicubic2d" {
		return nil, ErrRunOnCPU // CPU's integer kernel rounds in an order not reproduced here
	}
	nearest := s.kind == interpNearest || s.kind == interpNearestExact
	if !in.DType.IsFloat() && !nearest {
		return nil, notImplemented(s.name, in.DType)
	}
	if nearest && !in.DType.IsFloat() && in.DType != Uint8 {
		// CPU's nearest kernels take floats and uint8 only; its 2-d one names its channels-last variant.
		kernel := "compute_indices_weights_nearest"
		if s.rank == 2 {
			kernel = "upsample_nearest2d_channels_last"
		}
		return nil, notImplemented(kernel, in.DType)
	}
	b := c.B
	acc := accumElem(in.DType)
	if nearest {
		// Copies, not sums: a gather keeps infinities and NaNs in place.
		x := c.T(0)
		first := s.scaleArgs(false)
		sizes := append([]int64{}, in.Sizes...)
		for d := 0; d < s.rank; d++ {
			dim := int64(d + 2)
			idx := nearestIndex(b, s.kind, in.Sizes[dim], outSize[d], c.Float(first+d, 0), c.Has(first+d))
			slice := append([]int64{}, sizes...)
			slice[dim] = 1
			sizes[dim] = outSize[d]
			x = b.Gather(x, b.Reshape(idx, outSize[d], 1), hlo.T(in.DType.Elem(), sizes...),
				offsetDimsAround(len(sizes), dim), []int64{dim}, []int64{dim}, 1, slice)
		}
		return []*hlo.Value{x}, nil
	}
	x := b.Convert(c.T(0), acc)
	for _, m := range s.matrices(c, acc, in.Sizes, outSize, false) {
		x = b.DotGeneral(x, m, nil, nil, []int64{2}, []int64{1})
	}
	return []*hlo.Value{b.Convert(x, in.DType.Elem())}, nil
}

// backward is the upsample op's backward: the gradient times each axis's
// matrix transposed.
func (s upsampleSpec) backward(c *Ctx) ([]*hlo.Value, error) {
	gm := c.Meta(0)
	outSize, inSize := c.Ints(1, nil), c.Ints(2, nil)
	if err := s.check(inSize, outSize); err != nil {
		return nil, err
	}
	want := append([]int64{inSize[0], inSize[1]}, outSize...)
	if !slices.Equal(gm.Sizes, want) {
		return nil, Errorf("Expected grad_output to have the same shape as output; output.size(%d) = %d but got grad_output.size(%d) = %d",
			0, want[0], 0, gm.Sizes[0])
	}
	b := c.B
	acc := accumElem(gm.DType)
	g := b.Convert(c.T(0), acc)
	for _, m := range s.matrices(c, acc, inSize, outSize, true) {
		g = b.DotGeneral(g, m, nil, nil, []int64{2}, []int64{0})
	}
	return []*hlo.Value{b.Convert(g, gm.DType.Elem())}, nil
}

func init() {
	specs := []upsampleSpec{
		{"upsample_nearest1d", interpNearest, 1, false},
		{"upsample_nearest2d", interpNearest, 2, false},
		{"upsample_nearest3d", interpNearest, 3, false},
		{"_upsample_nearest_exact1d", interpNearestExact, 1, false},
		{"_upsample_nearest_exact2d", interpNearestExact, 2, false},
		{"_upsample_nearest_exact3d", interpNearestExact, 3, false},
		{"upsample_linear1d", interpLinear, 1, true},
		{"upsample_bilinear2d", interpLinear, 2, true},
		{"upsample_trilinear3d", interpLinear, 3, true},
		{"upsample_bicubic2d", interpCubic, 2, true},
	}
	for _, s := range specs {
		def("aten::"+s.name, s.forward, "aten::"+s.name+".out")
		def("aten::"+s.name+"_backward", s.backward, "aten::"+s.name+"_backward.grad_input")
	}
}
