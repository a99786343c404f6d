package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// gridSampler holds one grid_sampler_{2,3}d call: input [N, C, S...], grid
// [N, O..., s] with s spatial dims, and the interpolation (0 bilinear,
// 1 nearest, 2 bicubic), padding (0 zeros, 1 border, 2 reflection) and
// align_corners flags. Point values (coordinates, weights) have shape [N, O...].
type gridSampler struct {
	b                     *hlo.Builder
	in, grid              TensorMeta
	s                     int
	interp, padding       int64
	align                 bool
	sizes, outSp, ptShape []int64
}

// gridTap is one input location a sample reads: its flat index into the
// input (broadcast over channels), its weight and in-bounds mask, and per
// spatial dim the derivative of the weight along that dim's source
// coordinate.
type gridTap struct {
	idx, w, ok *hlo.Value
	dw         []*hlo.Value
}

func newGridSampler(c *Ctx, inArg, gridArg int, s int) (*gridSampler, error) {
	in, grid := c.Meta(inArg), c.Meta(gridArg)
	g := &gridSampler{b: c.B, in: in, grid: grid, s: s, interp: c.Int(gridArg+1, 0), padding: c.Int(gridArg+2, 0),
		align: c.Bool(gridArg+3, false)}
	name := []string{"", "", "grid_sampler_2d", "grid_sampler_3d"}[s]
	// CPU's common checks come first: batch, grid's last dimension, empty spatial dims.
	if len(in.Sizes) > 0 && len(grid.Sizes) > 0 && in.Sizes[0] != grid.Sizes[0] {
		return nil, Errorf("grid_sampler(): expected grid and input to have same batch size, but got input with sizes %s and grid with sizes %s",
			shapeString(in.Sizes), shapeString(grid.Sizes))
	}
	if len(in.Sizes) >= 2 && len(grid.Sizes) > 0 && grid.Sizes[len(grid.Sizes)-1] != int64(len(in.Sizes)-2) {
		return nil, Errorf("grid_sampler(): expected grid to have size %d in last dimension, but got grid with sizes %s",
			len(in.Sizes)-2, shapeString(grid.Sizes))
	}
	for i := 2; i < len(in.Sizes); i++ {
		if in.Sizes[i] == 0 {
			return nil, Errorf("grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes %s with dimension %d being empty",
				shapeString(in.Sizes), i)
		}
	}
	if len(in.Sizes) != s+2 || len(grid.Sizes) != s+2 || grid.Sizes[s+1] != int64(s) {
		return nil, Errorf("%s(): expected %dD input and grid with last dimension %d, but got input with sizes %s and grid with sizes %s",
			name, s+2, s, shapeString(in.Sizes), shapeString(grid.Sizes))
	}
	if g.interp == 2 && s == 3 {
		return nil, Errorf("grid_sampler(): bicubic interpolation only supports 4D input")
	}
	if !in.DType.IsFloat() || in.DType != grid.DType {
		return nil, Errorf("grid_sampler(): expected input and grid to have the same floating dtype, but got %s and %s",
			in.DType, grid.DType)
	}
	g.sizes = in.Sizes[2:]
	g.outSp = grid.Sizes[1 : s+1]
	g.ptShape = grid.Sizes[:s+1]
	return g, nil
}

func (g *gridSampler) k(v float64, e hlo.Elem) *hlo.Value {
	return g.b.BroadcastTo(g.b.Scalar(e, v), g.ptShape)
}

// coord is grid component j of the spatial dim in input order (the grid's
// last dim lists x first, that is the innermost input dim).
func (g *gridSampler) coord(grid *hlo.Value, j int) *hlo.Value {
	b := g.b
	comp := int64(g.s - 1 - j)
	start, limit := make([]int64, g.s+2), slices.Clone(g.grid.Sizes)
	start[g.s+1], limit[g.s+1] = comp, comp+1
	return b.Reshape(b.Slice(grid, start, limit, gridOnes(g.s+2)), g.ptShape...)
}

// unnormalize maps a grid coordinate in [-1, 1] to a source index, also
// giving d(index)/d(coordinate).
func (g *gridSampler) unnormalize(x *hlo.Value, size int64) (*hlo.Value, float64) {
	b, e := g.b, x.T.Elem
	one := g.k(1, e)
	if g.align {
		return b.Mul(b.Div(b.Add(x, one), g.k(2, e)), g.k(float64(size-1), e)), float64(size-1) / 2
	}
	return b.Div(b.Sub(b.Mul(b.Add(x, one), g.k(float64(size), e)), one), g.k(2, e)), float64(size) / 2
}

// clip clamps x to [0, size-1], giving the gradient multiplier (1 strictly inside).
func (g *gridSampler) clip(x *hlo.Value, size int64) (*hlo.Value, *hlo.Value) {
	b, e := g.b, x.T.Elem
	lo, hi := g.k(0, e), g.k(float64(size-1), e)
	r := b.Min(hi, b.Max(x, lo))
	inside := b.And(b.Compare(hlo.GT, x, lo), b.Compare(hlo.LT, x, hi))
	return r, b.Select(inside, g.k(1, e), g.k(0, e))
}

// reflect folds x into [twiceLow/2, twiceHigh/2] by reflection, giving the
// gradient sign.
func (g *gridSampler) reflect(x *hlo.Value, twiceLow, twiceHigh int64) (*hlo.Value, *hlo.Value) {
	b, e := g.b, x.T.Elem
	if twiceLow == twiceHigh {
		return g.k(0, e), g.k(0, e)
	}
	lo, span := g.k(float64(twiceLow)/2, e), g.k(float64(twiceHigh-twiceLow)/2, e)
	d := b.Sub(x, lo)
	neg := b.Compare(hlo.LT, d, g.k(0, e))
	mult := b.Select(neg, g.k(-1, e), g.k(1, e))
	d = b.Abs(d)
	extra := b.Rem(d, span)
	flips := b.Floor(b.Div(d, span))
	even := b.Compare(hlo.EQ, b.Rem(flips, g.k(2, e)), g.k(0, e))
	return b.Select(even, b.Add(extra, lo), b.Add(b.Sub(span, extra), lo)), b.Select(even, mult, b.Neg(mult))
}

// pad applies the padding mode to a source index, giving the gradient multiplier.
func (g *gridSampler) pad(x *hlo.Value, size int64) (*hlo.Value, *hlo.Value) {
	one := g.k(1, x.T.Elem)
	switch g.padding {
	case 1:
		return g.clip(x, size)
	case 2:
		var r, m *hlo.Value
		if g.align {
			r, m = g.reflect(x, 0, 2*(size-1))
		} else {
			r, m = g.reflect(x, -1, 2*size-1)
		}
		r, mc := g.clip(r, size)
		return r, g.b.Mul(m, mc)
	}
	return x, one
}

// sourceIndex is the padded source index of grid component j and the
// gradient multiplier d(index)/d(grid).
func (g *gridSampler) sourceIndex(grid *hlo.Value, j int) (*hlo.Value, *hlo.Value) {
	x, m := g.unnormalize(g.coord(grid, j), g.sizes[j])
	if g.interp == 2 {
		return x, g.k(m, x.T.Elem)
	}
	x, pm := g.pad(x, g.sizes[j])
	return x, g.b.Mul(pm, g.k(m, x.T.Elem))
}

// cubicCoeffs are the bicubic (A = -0.75) weights of the taps at offsets -1,
// 0, 1, 2 from floor for fraction t, and their derivatives in t.
func (g *gridSampler) cubicCoeffs(t *hlo.Value) ([]*hlo.Value, []*hlo.Value) {
	b, e := g.b, t.T.Elem
	k := func(v float64) *hlo.Value { return g.k(v, e) }
	const A = -0.75
	conv1 := func(x *hlo.Value) *hlo.Value {
		return b.Add(b.Mul(b.Mul(b.Sub(b.Mul(k(A+2), x), k(A+3)), x), x), k(1))
	}
	conv2 := func(x *hlo.Value) *hlo.Value {
		return b.Sub(b.Mul(b.Add(b.Mul(b.Sub(b.Mul(k(A), x), k(5*A)), x), k(8*A)), x), k(4*A))
	}
	omt := b.Sub(k(1), t)
	w := []*hlo.Value{conv2(b.Add(t, k(1))), conv1(t), conv1(omt), conv2(b.Add(omt, k(1)))}
	x0, x1, x2, x3 := b.Sub(k(-1), t), b.Neg(t), omt, b.Sub(k(2), t)
	dw := []*hlo.Value{
		b.Sub(b.Mul(b.Sub(b.Mul(k(-3*A), x0), k(10*A)), x0), k(8*A)),
		b.Mul(b.Sub(b.Mul(k(-3*(A+2)), x1), k(2*(A+3))), x1),
		b.Mul(b.Sub(b.Mul(k(3*(A+2)), x2), k(2*(A+3))), x2),
		b.Add(b.Mul(b.Sub(b.Mul(k(3*A), x3), k(10*A)), x3), k(8*A)),
	}
	// Those are the derivatives along the tap distance, opposite to t.
	for i := range dw {
		dw[i] = b.Neg(dw[i])
	}
	return w, dw
}

// axisTap is one candidate index along a spatial dim with its 1-D weight
// and the weight's derivative along the source coordinate.
type axisTap struct{ pos, w, dw *hlo.Value }

// axisTaps lists the taps along spatial dim j for source index x.
func (g *gridSampler) axisTaps(x *hlo.Value, j int) []axisTap {
	b, e := g.b, x.T.Elem
	k := func(v float64) *hlo.Value { return g.k(v, e) }
	switch g.interp {
	case 1:
		return []axisTap{{b.RoundEven(x), k(1), k(0)}}
	case 2:
		x0 := b.Floor(x)
		w, dw := g.cubicCoeffs(b.Sub(x, x0))
		taps := make([]axisTap, 4)
		for i := range taps {
			// Each bicubic tap position is padded on its own.
			p, _ := g.pad(b.Add(x0, k(float64(i-1))), g.sizes[j])
			taps[i] = axisTap{p, w[i], dw[i]}
		}
		return taps
	}
	// The weights are distances to the far corner, as CPU computes them.
	x0 := b.Floor(x)
	x1 := b.Add(x0, k(1))
	return []axisTap{{x0, b.Sub(x1, x), k(-1)}, {x1, b.Sub(x, x0), k(1)}}
}

// taps enumerates every input location the samples read (the product of the
// per-dim taps), with flat indices into the input broadcast to [N, C, O...].
func (g *gridSampler) taps(grid *hlo.Value) ([]gridTap, []*hlo.Value) {
	b := g.b
	per := make([][]axisTap, g.s)
	mults := make([]*hlo.Value, g.s)
	for j := 0; j < g.s; j++ {
		var x *hlo.Value
		x, mults[j] = g.sourceIndex(grid, j)
		per[j] = g.axisTaps(x, j)
	}
	n, ch := g.in.Sizes[0], g.in.Sizes[1]
	outShape := append([]int64{n, ch}, g.outSp...)
	mapping := []int64{0}
	for i := 0; i < g.s; i++ {
		mapping = append(mapping, int64(i+2))
	}
	plane := int64(1)
	for _, s := range g.sizes {
		plane *= s
	}
	it := hlo.T(hlo.S64, outShape...)
	base := b.Mul(b.Add(b.Mul(b.Iota(it, 0), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), ch), outShape)),
		b.Iota(it, 1)), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), plane), outShape))
	var out []gridTap
	var rec func(j int, sel []axisTap)
	rec = func(j int, sel []axisTap) {
		if j == g.s {
			e := sel[0].pos.T.Elem
			flat := g.k(0, hlo.S64)
			w, ok := g.k(1, e), b.Compare(hlo.EQ, g.k(0, e), g.k(0, e))
			dw := make([]*hlo.Value, g.s)
			for d := 0; d < g.s; d++ {
				dw[d] = sel[d].dw
			}
			// Weights multiply innermost dim first, as CPU does.
			for d := g.s - 1; d >= 0; d-- {
				t := sel[d]
				size := g.sizes[d]
				ip := b.Convert(b.Select(b.IsFinite(t.pos), t.pos, g.k(-1, e)), hlo.S64)
				in := b.And(b.Compare(hlo.GE, ip, g.k(0, hlo.S64)), b.Compare(hlo.LT, ip, g.k(float64(size), hlo.S64)))
				ok = b.And(ok, in)
				ip = b.Select(in, ip, g.k(0, hlo.S64))
				flat = b.Add(flat, b.Mul(ip, g.k(float64(gridProd(g.sizes[d+1:])), hlo.S64)))
				w = b.Mul(w, t.w)
				for q := 0; q < g.s; q++ {
					if q != d {
						dw[q] = b.Mul(dw[q], t.w)
					}
				}
			}
			idx := b.Add(base, b.BroadcastInDim(flat, outShape, mapping))
			out = append(out, gridTap{idx, w, ok, dw})
			return
		}
		for _, t := range per[j] {
			rec(j+1, append(sel, t))
		}
	}
	rec(0, nil)
	return out, mults
}

// chanBroadcast broadcasts a point value [N, O...] over channels.
func (g *gridSampler) chanBroadcast(v *hlo.Value) *hlo.Value {
	shape := append([]int64{g.in.Sizes[0], g.in.Sizes[1]}, g.outSp...)
	mapping := []int64{0}
	for i := 0; i < g.s; i++ {
		mapping = append(mapping, int64(i+2))
	}
	return g.b.BroadcastInDim(v, shape, mapping)
}

// stackTaps stacks the taps' [N, C, O...] index tensors into [K, N, C, O...],
// so one gather or scatter serves every tap.
func (g *gridSampler) stackTaps(taps []gridTap) *hlo.Value {
	parts := make([]*hlo.Value, len(taps))
	for i, t := range taps {
		parts[i] = g.b.Reshape(t.idx, append([]int64{1}, t.idx.T.Shape...)...)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return g.b.Concatenate(0, parts...)
}

// tapSlice is tap i of a stacked [K, N, C, O...] value.
func (g *gridSampler) tapSlice(v *hlo.Value, i int64) *hlo.Value {
	r := v.T.Rank()
	start, limit := make([]int64, r), slices.Clone(v.T.Shape)
	start[0], limit[0] = i, i+1
	return g.b.Reshape(g.b.Slice(v, start, limit, gridOnes(r)), v.T.Shape[1:]...)
}

// forward samples input at grid: the sum over taps, in order, of weight *
// value (0 out of bounds).
func (g *gridSampler) forward(input, grid *hlo.Value) *hlo.Value {
	b := g.b
	flatIn := b.Reshape(input, g.in.Sizes[0]*g.in.Sizes[1]*gridProd(g.sizes))
	taps, _ := g.taps(grid)
	vals := b.GatherFlat(flatIn, g.stackTaps(taps))
	var r *hlo.Value
	for i, t := range taps {
		w := b.Select(t.ok, t.w, g.k(0, t.w.T.Elem))
		term := b.Mul(g.tapSlice(vals, int64(i)), g.chanBroadcast(w))
		if r == nil {
			r = term
		} else {
			r = b.Add(r, term)
		}
	}
	return r
}

// gridOnes is n unit strides.
func gridOnes(n int) []int64 {
	r := make([]int64, n)
	for i := range r {
		r[i] = 1
	}
	return r
}

// gridProd is the product of xs.
func gridProd(xs []int64) int64 {
	p := int64(1)
	for _, x := range xs {
		p *= x
	}
	return p
}

// gridSamplerRule is grid_sampler_{2,3}d(input, grid, interpolation_mode,
// padding_mode, align_corners); like CPU it computes in the input's precision.
func gridSamplerRule(s int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		g, err := newGridSampler(c, 0, 1, s)
		if err != nil {
			return nil, err
		}
		return []*hlo.Value{g.forward(c.T(0), c.T(1))}, nil
	}
}

func init() {
	def("aten::grid_sampler_2d", gridSamplerRule(2), "aten::grid_sampler_2d.out")
	def("aten::grid_sampler_3d", gridSamplerRule(3), "aten::grid_sampler_3d.out")
}
