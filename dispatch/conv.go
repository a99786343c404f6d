package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// convParams are a convolution's window attributes, expanded to one entry
// per spatial dimension.
type convParams struct {
	stride, pad, dil, outPad []int64
	transposed               bool
	groups                   int64
}

// expandParam repeats a one-element list to n entries, as PyTorch's
// expand_param_if_needed does.
func expandParam(xs []int64, n int, name string) ([]int64, error) {
	if len(xs) == 1 && n != 1 {
		out := make([]int64, n)
		for i := range out {
			out[i] = xs[0]
		}
		return out, nil
	}
	if len(xs) != n {
		return nil, Errorf("expected %s to be a single integer value or a list of %d values to match the convolution dimensions, but got %s=%s",
			name, n, name, shapeString(xs))
	}
	return xs, nil
}

// convArgs reads stride, padding, dilation, transposed, output_padding and
// groups from arguments first.. and checks input (in) against weight (w).
func (c *Ctx) convArgs(first int, in, w TensorMeta) (convParams, error) {
	var p convParams
	if w.Rank() < 3 {
		return p, Errorf("weight should have at least three dimensions")
	}
	n := w.Rank() - 2
	if in.Rank() != w.Rank() {
		return p, Errorf("Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional input of size %s instead",
			w.Rank(), w.Rank(), shapeString(w.Sizes), in.Rank(), shapeString(in.Sizes))
	}
	if in.DType != w.DType {
		return p, Errorf("Input type (%s) and weight type (%s) should be the same", cppName(in.DType), cppName(w.DType))
	}
	if in.DType == Bool {
		return p, notImplemented("slow_conv2d_cpu", in.DType)
	}
	if !in.DType.IsFloat() && !in.DType.IsIntegral(false) {
		return p, Errorf("convolution is not implemented for %s on tpu", in.DType)
	}
	var err error
	if p.stride, err = expandParam(c.Ints(first, nil), n, "stride"); err != nil {
		return p, err
	}
	if p.pad, err = expandParam(c.Ints(first+1, nil), n, "padding"); err != nil {
		return p, err
	}
	if p.dil, err = expandParam(c.Ints(first+2, nil), n, "dilation"); err != nil {
		return p, err
	}
	p.transposed = c.Bool(first+3, false)
	if p.outPad, err = expandParam(c.Ints(first+4, []int64{0}), n, "output_padding"); err != nil {
		return p, err
	}
	p.groups = c.Int(first+5, 1)
	for i := 0; i < n; i++ {
		if p.stride[i] <= 0 {
			return p, Errorf("non-positive stride is not supported")
		}
		if p.pad[i] < 0 {
			return p, Errorf("negative padding is not supported")
		}
		if p.dil[i] <= 0 {
			return p, Errorf("dilation should be greater than zero")
		}
		if p.outPad[i] < 0 {
			return p, Errorf("negative output_padding is not supported")
		}
	}
	if p.groups <= 0 {
		return p, Errorf("non-positive groups is not supported")
	}
	// The weight's groups come first, as in ATen's check_shape_forward.
	if w.Sizes[0] < p.groups {
		return p, Errorf("Given groups=%d, expected weight to be at least %d at dimension 0, but got weight of size %s instead",
			p.groups, p.groups, shapeString(w.Sizes))
	}
	if w.Sizes[0]%p.groups != 0 {
		return p, Errorf("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s instead",
			p.groups, p.groups, shapeString(w.Sizes))
	}
	if p.transposed {
		if in.Sizes[1] != w.Sizes[0] {
			return p, Errorf("Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
				shapeString(w.Sizes), shapeString(in.Sizes), w.Sizes[0], in.Sizes[1])
		}
		return p, nil
	}
	if in.Sizes[1] != w.Sizes[1]*p.groups {
		return p, Errorf("Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
			p.groups, shapeString(w.Sizes), shapeString(in.Sizes), w.Sizes[1]*p.groups, in.Sizes[1])
	}
	for i := 0; i < n; i++ {
		padded := in.Sizes[i+2] + 2*p.pad[i]
		dk := (w.Sizes[i+2]-1)*p.dil[i] + 1
		if padded < dk {
			return p, Errorf("Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size can't be greater than actual input size",
				shapeString(addPad(in.Sizes[2:], p.pad)), shapeString(dilatedKernel(w.Sizes[2:], p.dil)))
		}
	}
	return p, nil
}

func addPad(s, pad []int64) []int64 {
	out := make([]int64, len(s))
	for i := range s {
		out[i] = s[i] + 2*pad[i]
	}
	return out
}

func dilatedKernel(k, dil []int64) []int64 {
	out := make([]int64, len(k))
	for i := range k {
		out[i] = (k[i]-1)*dil[i] + 1
	}
	return out
}

// transposedSize is the spatial size of a transposed convolution's result.
func (p convParams) transposedSize(in, k []int64) []int64 {
	out := make([]int64, len(in))
	for i := range in {
		out[i] = (in[i]-1)*p.stride[i] - 2*p.pad[i] + p.dil[i]*(k[i]-1) + p.outPad[i] + 1
	}
	return out
}

// convForward convolves x [N, C, S...] with w [O, C/G, K...].
func convForward(b *hlo.Builder, x, w *hlo.Value, p convParams) *hlo.Value {
	n := x.T.Rank() - 2
	pad := make([][2]int64, n)
	for i := range pad {
		pad[i] = [2]int64{p.pad[i], p.pad[i]}
	}
	return b.Convolution(x, w, hlo.ChannelsFirst(n), hlo.ConvOpts{
		Strides: p.stride, RhsDilation: p.dil, Padding: pad, FeatureGroups: p.groups,
	})
}

// convInputGrad is the gradient of convForward with respect to its input
// of spatial size in, given g [N, O, OS...]: a convolution of g, dilated by
// the stride, with the flipped kernel whose in and out features are swapped
// within each group.
func convInputGrad(b *hlo.Builder, g, w *hlo.Value, in []int64, p convParams) *hlo.Value {
	n := g.T.Rank() - 2
	o, cg, k := w.T.Shape[0], w.T.Shape[1], w.T.Shape[2:]
	gr := p.groups
	// [O, Cg, K] -> [G, O/G, Cg, K] -> [O/G, G, Cg, K] -> [O/G, G*Cg, K].
	wt := b.Reshape(w, append([]int64{gr, o / gr, cg}, k...)...)
	perm := []int64{1, 0, 2}
	for i := 0; i < n; i++ {
		perm = append(perm, int64(i+3))
	}
	wt = b.Transpose(wt, perm...)
	wt = b.Reshape(wt, append([]int64{o / gr, gr * cg}, k...)...)
	sp := make([]int64, n)
	for i := range sp {
		sp[i] = int64(i + 2)
	}
	wt = b.Reverse(wt, sp...)
	pad := make([][2]int64, n)
	for i := range pad {
		dk := (k[i]-1)*p.dil[i] + 1
		outDil := (g.T.Shape[i+2]-1)*p.stride[i] + 1
		lo := dk - 1 - p.pad[i]
		pad[i] = [2]int64{lo, in[i] + dk - 1 - outDil - lo}
	}
	d := hlo.ChannelsFirst(n)
	d.RhsIn, d.RhsOut = 0, 1
	return b.Convolution(g, wt, d, hlo.ConvOpts{
		LhsDilation: p.stride, RhsDilation: p.dil, Padding: pad, FeatureGroups: gr,
	})
}

// convWeightGrad is the gradient of convForward with respect to a kernel of
// spatial size k, given input x [N, C, S...] and g [N, O, OS...]: a
// convolution of x (channels as batch) with g (batch as features), one
// batch group per convolution group.
func convWeightGrad(b *hlo.Builder, x, g *hlo.Value, k []int64, p convParams) *hlo.Value {
	n := x.T.Rank() - 2
	pad := make([][2]int64, n)
	for i := range pad {
		dk := (k[i]-1)*p.dil[i] + 1
		outDil := (g.T.Shape[i+2]-1)*p.stride[i] + 1
		pad[i] = [2]int64{p.pad[i], outDil - x.T.Shape[i+2] + dk - p.pad[i] - 1}
	}
	sp := make([]int64, n)
	for i := range sp {
		sp[i] = int64(i + 2)
	}
	d := hlo.ConvDims{
		LhsBatch: 1, LhsFeature: 0, LhsSpatial: sp,
		RhsIn: 0, RhsOut: 1, RhsSpatial: sp,
		OutBatch: 1, OutFeature: 0, OutSpatial: sp,
	}
	return b.Convolution(x, g, d, hlo.ConvOpts{
		Strides: p.dil, RhsDilation: p.stride, Padding: pad, BatchGroups: p.groups,
	})
}

// cropTo keeps the leading limit elements of each dimension of x. The
// plain convolution that maps a transposed convolution's result back to its
// input yields extra trailing elements when output_padding is at least the
// stride (allowed while it is below the dilation); those are dropped.
func cropTo(b *hlo.Builder, x *hlo.Value, limit []int64) *hlo.Value {
	if slices.Equal(x.T.Shape, limit) {
		return x
	}
	n := len(limit)
	start, strides := make([]int64, n), make([]int64, n)
	lim := make([]int64, n)
	for i := range strides {
		strides[i] = 1
		lim[i] = min(limit[i], x.T.Shape[i])
	}
	return b.Slice(x, start, lim, strides)
}

// convolution is aten::convolution (and convolution_overrideable): a
// convolution or transposed convolution of input with weight, plus bias.
func convolution(c *Ctx) ([]*hlo.Value, error) {
	in, w := c.Meta(0), c.Meta(1)
	p, err := c.convArgs(3, in, w)
	if err != nil {
		return nil, err
	}
	var outC int64
	if p.transposed {
		outC = w.Sizes[1] * p.groups
	} else {
		outC = w.Sizes[0]
	}
	if c.Has(2) {
		bm := c.Meta(2)
		if bm.Rank() != 1 || bm.Sizes[0] != outC {
			return nil, Errorf("Given weight of size %s, expected bias to be 1-dimensional with %d elements, but got bias of size %s instead",
				shapeString(w.Sizes), outC, shapeString(bm.Sizes))
		}
		if bm.DType != in.DType {
			return nil, Errorf("Input type (%s) and bias type (%s) should be the same", cppName(in.DType), cppName(bm.DType))
		}
	}
	b := c.B
	// Half-precision inputs accumulate in float32 and round once, as CPU's
	// kernels do.
	acc := accumElem(in.DType)
	x, wt := b.Convert(c.T(0), acc), b.Convert(c.T(1), acc)
	var y *hlo.Value
	if p.transposed {
		y = convInputGrad(b, x, wt, p.transposedSize(in.Sizes[2:], w.Sizes[2:]), p)
	} else {
		y = convForward(b, x, wt, p)
	}
	if c.Has(2) {
		y = b.Add(y, b.BroadcastInDim(b.Convert(c.T(2), acc), y.T.Shape, []int64{1}))
	}
	return []*hlo.Value{b.Convert(y, in.DType.Elem())}, nil
}

// convolutionBackward is aten::convolution_backward: the gradients of input,
// weight and bias chosen by output_mask (the others come back as zeros).
// maskArg is the position of output_mask, first that of stride.
func convolutionBackward(first, maskArg int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, in, w := c.Meta(0), c.Meta(1), c.Meta(2)
		p, err := c.convArgs(first, in, w)
		if err != nil {
			return nil, err
		}
		if gm.Rank() != in.Rank() || gm.DType != in.DType {
			return nil, Errorf("grad_output %s does not match input %s", gm, in)
		}
		mask := c.Ints(maskArg, []int64{1, 1, 1})
		b := c.B
		e := in.DType.Elem()
		zeros := func(s []int64) *hlo.Value { return b.BroadcastTo(b.Scalar(e, 0), s) }
		outC := gm.Sizes[1]
		gx, gw, gb := zeros(in.Sizes), zeros(w.Sizes), zeros([]int64{outC})
		if mask[0] != 0 {
			if p.transposed {
				gx = cropTo(b, convForward(b, c.T(0), c.T(2), p), in.Sizes)
			} else {
				gx = convInputGrad(b, c.T(0), c.T(2), in.Sizes[2:], p)
			}
		}
		if mask[1] != 0 {
			if p.transposed {
				gw = convWeightGrad(b, c.T(0), c.T(1), w.Sizes[2:], p)
			} else {
				gw = convWeightGrad(b, c.T(1), c.T(0), w.Sizes[2:], p)
			}
		}
		if mask[2] != 0 {
			dims := []int64{0}
			for i := 2; i < gm.Rank(); i++ {
				dims = append(dims, int64(i))
			}
			gb = sumProd(b, c.T(0), gm.DType, dims, false)
		}
		for i, want := range [][]int64{in.Sizes, w.Sizes} {
			got := []*hlo.Value{gx, gw}[i]
			if !slices.Equal(got.T.Shape, want) {
				return nil, Errorf("gradient of shape %s does not match %s", shapeString(got.T.Shape), shapeString(want))
			}
		}
		return []*hlo.Value{gx, gw, gb}, nil
	}
}

func init() {
	def("aten::convolution", convolution)
	def("aten::convolution_overrideable", convolution)
	def("aten::convolution_backward", convolutionBackward(4, 10), "aten::convolution_backward.out")
	def("aten::convolution_backward_overrideable", convolutionBackward(3, 9), "aten::convolution_backward_overrideable.out")
}
