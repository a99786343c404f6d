package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// backward gives the input gradient (scatter-added weighted output
// gradients) and the grid gradient (summed over channels).
func (g *gridSampler) backward(gOut, input, grid *hlo.Value) (*hlo.Value, *hlo.Value) {
	b := g.b
	total := g.in.Sizes[0] * g.in.Sizes[1] * gridProd(g.sizes)
	flatIn := b.Reshape(input, total)
	taps, mults := g.taps(grid)
	e := gOut.T.Elem
	idx := g.stackTaps(taps)
	upd := make([]*hlo.Value, len(taps))
	for i, t := range taps {
		w := b.Select(t.ok, t.w, g.k(0, e))
		upd[i] = b.Reshape(b.Mul(gOut, g.chanBroadcast(w)), append([]int64{1}, gOut.T.Shape...)...)
	}
	updAll := upd[0]
	if len(upd) > 1 {
		updAll = b.Concatenate(0, upd...)
	}
	gIn := b.ScatterFlat(b.BroadcastTo(b.Scalar(e, 0), []int64{total}), idx, updAll,
		func(rb *hlo.Builder, old, upd *hlo.Value) *hlo.Value { return rb.Add(old, upd) })
	gsrc := make([]*hlo.Value, g.s)
	if g.interp != 1 {
		vals := b.GatherFlat(flatIn, idx)
		for i, t := range taps {
			v := b.Mul(g.tapSlice(vals, int64(i)), gOut)
			v = b.Select(g.chanBroadcast(t.ok), v, b.BroadcastTo(b.Scalar(e, 0), v.T.Shape))
			sv := b.Reduce(v, b.Scalar(e, 0), hlo.ReduceSum, 1)
			for j := 0; j < g.s; j++ {
				term := b.Mul(sv, t.dw[j])
				if gsrc[j] == nil {
					gsrc[j] = term
				} else {
					gsrc[j] = b.Add(gsrc[j], term)
				}
			}
		}
	}
	comps := make([]*hlo.Value, g.s)
	for j := 0; j < g.s; j++ {
		gj := g.k(0, e)
		if gsrc[j] != nil {
			gj = b.Mul(gsrc[j], mults[j])
		}
		comps[g.s-1-j] = b.Reshape(gj, append(slices.Clone(g.ptShape), 1)...)
	}
	return b.Reshape(gIn, g.in.Sizes...), b.Concatenate(g.s+1, comps...)
}

// gridSamplerBackwardRule is grid_sampler_{2,3}d_backward(grad_output,
// input, grid, interpolation_mode, padding_mode, align_corners, output_mask).
func gridSamplerBackwardRule(s int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		g, err := newGridSampler(c, 1, 2, s)
		if err != nil {
			return nil, err
		}
		mask := c.mask(6, 2)
		e := g.in.DType.Elem()
		b := c.B
		gIn, gGrid := g.backward(c.T(0), c.T(1), c.T(2))
		return []*hlo.Value{
			maskedOut(b, mask[0], func() *hlo.Value { return gIn }, e, g.in.Sizes),
			maskedOut(b, mask[1], func() *hlo.Value { return gGrid }, e, g.grid.Sizes),
		}, nil
	}
}

func init() {
	def("aten::grid_sampler_2d_backward", gridSamplerBackwardRule(2), "aten::grid_sampler_2d_backward.out")
	def("aten::grid_sampler_3d_backward", gridSamplerBackwardRule(3), "aten::grid_sampler_3d_backward.out")
}
