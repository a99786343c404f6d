package dispatch

import (
	"fmt"
	"slices"
	"strings"

	"torchtpu/hlo"
)

// adaptiveArgs checks the input and output size of an adaptive pooling over
// n spatial dimensions and returns the input's leading (batch, channel) sizes
// and its spatial sizes; name is the op's name in the errors.
func adaptiveArgs(name string, in TensorMeta, n int, out []int64) (lead, sp []int64, err error) {
	r := in.Rank()
	if len(out) != n {
		if strings.HasPrefix(name, "adaptive_avg") {
			return nil, nil, Errorf("%s: output_size must be %d", name, n)
		}
		return nil, nil, Errorf("%s(): internal error: output_size.size() must be %d", name, n)
	}
	if r != n+1 && r != n+2 {
		return nil, nil, Errorf("%s(): Expected %dD or %dD tensor, but got %s", name, n+1, n+2, shapeString(in.Sizes))
	}
	for i := 1; i < r; i++ {
		if in.Sizes[i] == 0 {
			return nil, nil, Errorf("%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with dimension %d being empty",
				name, shapeString(in.Sizes), i)
		}
	}
	if i := slices.IndexFunc(out, func(o int64) bool { return o < 0 }); i >= 0 && strings.Contains(name, "max") {
		// CPU's max kernels get as far as allocating the result.
		return nil, nil, Errorf("Trying to create tensor with negative dimension %d: %s", out[i],
			shapeString(append(slices.Clone(in.Sizes[:in.Rank()-n]), out...)))
	}
	if slices.Min(out) < 0 {
		parts := make([]string, n)
		for i, o := range out {
			parts[i] = fmt.Sprint(o)
		}
		return nil, nil, Errorf("%s: elements of output_size must be greater than or equal to 0 but received {%s}",
			name, strings.Join(parts, ", "))
	}
	if !in.DType.IsFloat() {
		// CPU's 3-d kernels carry a _cpu suffix.
		kernel := name
		if n == 3 {
			kernel += "_cpu"
		}
		return nil, nil, notImplemented(kernel, in.DType)
	}
	return in.Sizes[:r-n], in.Sizes[r-n:], nil
}

// adaptiveMatrix is the [out, in] matrix whose row i averages PyTorch's bin
// i: elements floor(i*in/out) <= h < ceil((i+1)*in/out).
func adaptiveMatrix(b *hlo.Builder, e hlo.Elem, in, out int64) *hlo.Value {
	t := hlo.T(hlo.S64, out, in)
	i, h := b.Iota(t, 0), b.Iota(t, 1)
	c := func(v int64) *hlo.Value { return b.ConstantInt(t, v) }
	start := b.Div(b.Mul(i, c(in)), c(out))
	end := b.Div(b.Add(b.Mul(b.Add(i, c(1)), c(in)), c(out-1)), c(out))
	inBin := b.And(b.Compare(hlo.GE, h, start), b.Compare(hlo.LT, h, end))
	w := b.Div(b.Constant(hlo.T(e, out, in), 1), b.Convert(b.Sub(end, start), e))
	return b.Select(inBin, w, b.Constant(hlo.T(e, out, in), 0))
}

// evenBins returns each spatial size's bin length when every output size
// divides its input size (the bins are then equal windows), or nil.
func evenBins(sp, out []int64) []int64 {
	k := make([]int64, len(sp))
	for i := range sp {
		if sp[i]%out[i] != 0 {
			return nil
		}
		k[i] = sp[i] / out[i]
	}
	return k
}

// adaptiveAvgPool returns _adaptive_avg_pool{2,3}d: equal windows through
// reduce_window when the sizes divide, bin-averaging matrices applied along
// each spatial axis otherwise.
func adaptiveAvgPool(n int) Fn {
	name := fmt.Sprintf("adaptive_avg_pool%dd", n)
	return func(c *Ctx) ([]*hlo.Value, error) {
		in := c.Meta(0)
		out := c.Ints(1, nil)
		lead, sp, err := adaptiveArgs(name, in, n, out)
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := accumElem(in.DType)
		shape := append(append([]int64{}, lead...), out...)
		if numel(out) == 0 {
			return []*hlo.Value{b.Constant(hlo.T(in.DType.Elem(), shape...), 0)}, nil
		}
		x := b.Convert(b.Reshape(c.T(0), append([]int64{numel(lead)}, sp...)...), acc)
		if k := evenBins(sp, out); k != nil {
			dims := append([]int64{1}, k...)
			s := b.ReduceWindow(x, b.Scalar(acc, 0), hlo.ReduceSum, hlo.Window{Dims: dims, Strides: dims})
			x = b.Div(s, b.Constant(s.T, float64(numel(k))))
		} else {
			// Each product contracts the next spatial axis and appends its output axis.
			for i := range sp {
				x = b.DotGeneral(x, adaptiveMatrix(b, acc, sp[i], out[i]), nil, nil, []int64{1}, []int64{1})
			}
		}
		return []*hlo.Value{b.Reshape(b.Convert(x, in.DType.Elem()), shape...)}, nil
	}
}

// adaptiveAvgPoolBackward returns _adaptive_avg_pool{2,3}d_backward: each
// output gradient spread evenly over its bin.
func adaptiveAvgPoolBackward(n int) Fn {
	name := fmt.Sprintf("adaptive_avg_pool%dd_backward", n)
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, in := c.Meta(0), c.Meta(1)
		if gm.Rank() != in.Rank() || gm.Rank() < n+1 {
			return nil, Errorf("%s(): grad_output %s does not match input %s", name, gm, in)
		}
		out := gm.Sizes[gm.Rank()-n:]
		lead, sp, err := adaptiveArgs(name, in, n, out)
		if err != nil {
			return nil, err
		}
		b := c.B
		acc := accumElem(in.DType)
		if numel(out) == 0 {
			return []*hlo.Value{b.Constant(hlo.T(in.DType.Elem(), in.Sizes...), 0)}, nil
		}
		planes := numel(lead)
		g := b.Convert(b.Reshape(c.T(0), append([]int64{planes}, out...)...), acc)
		if k := evenBins(sp, out); k != nil {
			// [P, O1, O2, ...] -> [P, O1, K1, O2, K2, ...] -> [P, S1, S2, ...].
			g = b.Div(g, b.Constant(g.T, float64(numel(k))))
			split, kept := []int64{planes}, []int64{0}
			for i := range sp {
				kept = append(kept, int64(len(split)))
				split = append(split, out[i], k[i])
			}
			g = b.Reshape(b.BroadcastInDim(g, split, kept), append([]int64{planes}, sp...)...)
		} else {
			for i := range sp {
				g = b.DotGeneral(g, adaptiveMatrix(b, acc, sp[i], out[i]), nil, nil, []int64{1}, []int64{0})
			}
		}
		return []*hlo.Value{b.Reshape(b.Convert(g, in.DType.Elem()), in.Sizes...)}, nil
	}
}

// adaptiveBins returns, as an s64 [out*k] vector, the input positions of
// each output's bin along one axis, k per bin (the widest bin's length;
// shorter bins repeat their first element), and k.
func adaptiveBins(b *hlo.Builder, in, out int64) (*hlo.Value, int64) {
	k := int64(0)
	for o := int64(0); o < out; o++ {
		start, end := o*in/out, ((o+1)*in+out-1)/out
		k = max(k, end-start)
	}
	t := hlo.T(hlo.S64, out, k)
	o, j := b.Iota(t, 0), b.Iota(t, 1)
	ci := func(v int64) *hlo.Value { return b.ConstantInt(t, v) }
	start := b.Div(b.Mul(o, ci(in)), ci(out))
	end := b.Div(b.Add(b.Mul(b.Add(o, ci(1)), ci(in)), ci(out-1)), ci(out))
	pos := b.Add(start, j)
	pos = b.Select(b.Compare(hlo.LT, pos, end), pos, start)
	return b.Reshape(pos, out*k), k
}

// adaptiveMaxPool returns adaptive_max_pool{2,3}d: each bin's maximum and
// its flat position within the input plane.
func adaptiveMaxPool(n int) Fn {
	name := fmt.Sprintf("adaptive_max_pool%dd", n)
	return func(c *Ctx) ([]*hlo.Value, error) {
		in := c.Meta(0)
		out := c.Ints(1, nil)
		lead, sp, err := adaptiveArgs(name, in, n, out)
		if err != nil {
			return nil, err
		}
		b := c.B
		shape := append(append([]int64{}, lead...), out...)
		if numel(out) == 0 {
			return []*hlo.Value{b.Constant(hlo.T(in.DType.Elem(), shape...), 0), b.ConstantInt(hlo.T(hlo.S64, shape...), 0)}, nil
		}
		planes := numel(lead)
		x := b.Reshape(c.T(0), append([]int64{planes}, sp...)...)
		// Gather each axis's bins in turn: [P, O1*K1, O2*K2, ...].
		var ks []int64
		var flat *hlo.Value
		inner := numel(sp)
		binShape := []int64{}
		for i := 0; i < n; i++ {
			pos, k := adaptiveBins(b, sp[i], out[i])
			ks = append(ks, k)
			sizes := append([]int64{}, x.T.Shape...)
			slice := append([]int64{}, sizes...)
			dim := int64(i + 1)
			slice[dim] = 1
			sizes[dim] = out[i] * k
			x = b.Gather(x, b.Reshape(pos, out[i]*k, 1), hlo.T(x.T.Elem, sizes...),
				offsetDimsAround(len(sizes), dim), []int64{dim}, []int64{dim}, 1, slice)
			// The flat input index of every gathered element.
			inner /= sp[i]
			term := b.Mul(pos, b.ConstantInt(pos.T, inner))
			binShape = append(binShape, out[i]*k)
			if flat == nil {
				flat = term
			} else {
				flat = b.Add(b.BroadcastInDim(flat, binShape, iotaDims(i)),
					b.BroadcastInDim(term, binShape, []int64{int64(i)}))
			}
		}
		// [P, O1, K1, O2, K2, ...] -> [P, O1, O2, ..., K1 * K2 ...].
		split := []int64{planes}
		for i := 0; i < n; i++ {
			split = append(split, out[i], ks[i])
		}
		perm := []int64{0}
		for i := 0; i < n; i++ {
			perm = append(perm, int64(1+2*i))
		}
		for i := 0; i < n; i++ {
			perm = append(perm, int64(2+2*i))
		}
		final := append([]int64{planes}, out...)
		final = append(final, numel(ks))
		x = b.Reshape(b.Transpose(b.Reshape(x, split...), perm...), final...)
		idx := b.BroadcastInDim(b.Reshape(flat, split[1:]...), split, iotaDims(len(split))[1:])
		idx = b.Reshape(b.Transpose(idx, perm...), final...)
		v, i := b.ReduceArg(x, idx, int64(n+1), hlo.GT)
		return []*hlo.Value{b.Reshape(v, shape...), b.Reshape(i, shape...)}, nil
	}
}

// adaptiveMaxPoolBackward adds each output gradient into the input position
// its index names.
func adaptiveMaxPoolBackward(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, in, im := c.Meta(0), c.Meta(1), c.Meta(2)
		r := in.Rank()
		if r < n+1 || gm.Rank() != r || !slices.Equal(gm.Sizes, im.Sizes) || im.DType != Int64 {
			return nil, Errorf("adaptive_max_pool%dd_backward(): grad_output %s and indices %s do not match input %s", n, gm, im, in)
		}
		planes := numel(in.Sizes[:r-n])
		res := scatterPlanes(c.B, c.T(0), c.T(2), in.DType.Elem(), planes, numel(gm.Sizes[r-n:]), numel(in.Sizes[r-n:]))
		return []*hlo.Value{c.B.Reshape(res, in.Sizes...)}, nil
	}
}

func init() {
	def("aten::_adaptive_avg_pool2d", adaptiveAvgPool(2), "aten::_adaptive_avg_pool2d.out")
	def("aten::_adaptive_avg_pool3d", adaptiveAvgPool(3), "aten::_adaptive_avg_pool3d.out")
	def("aten::_adaptive_avg_pool2d_backward", adaptiveAvgPoolBackward(2), "aten::_adaptive_avg_pool2d_backward.out")
	def("aten::_adaptive_avg_pool3d_backward", adaptiveAvgPoolBackward(3), "aten::_adaptive_avg_pool3d_backward.out")
	def("aten::adaptive_max_pool2d", adaptiveMaxPool(2), "aten::adaptive_max_pool2d.out")
	def("aten::adaptive_max_pool3d", adaptiveMaxPool(3), "aten::adaptive_max_pool3d.out")
	def("aten::adaptive_max_pool2d_backward", adaptiveMaxPoolBackward(2), "aten::adaptive_max_pool2d_backward.grad_input")
	def("aten::adaptive_max_pool3d_backward", adaptiveMaxPoolBackward(3), "aten::adaptive_max_pool3d_backward.grad_input")
}
