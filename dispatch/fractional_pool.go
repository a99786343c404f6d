package dispatch

import (
	"slices"

	"torchtpu/hlo"
)

// fracPool holds the sizes of a fractional max pooling over n spatial dims.
type fracPool struct {
	n               int
	lead            []int64 // [C] or [N, C]
	batch, planes   int64   // batch (1 when unbatched) and batch * channels
	in, kernel, out []int64
}

// fracName is the prefix of the fractional pooling errors.
func fracName(n int) string {
	if n == 2 {
		return "fractional_max_pool2d()"
	}
	return "fractional_max_pool3d_out()"
}

// fracArgs checks fractional_max_pool{2,3}d's input, kernel_size (argument
// 1), output_size (argument 2) and random_samples (argument 3) as CPU does.
func (c *Ctx) fracArgs(n int) (fracPool, error) {
	in := c.Meta(0)
	ks, out := c.Ints(1, nil), c.Ints(2, nil)
	tuple := "tuple of Ints"
	if n == 3 {
		tuple = "tuple of three Ints"
	}
	name := "fractional_max_pool" + string(rune('0'+n)) + "d"
	if len(ks) != n {
		return fracPool{}, Errorf("%s: kernel_size must either be a single Int or %s", name, tuple)
	}
	if len(out) != n {
		return fracPool{}, Errorf("%s: output_size must either be a single Int or %s", name, tuple)
	}
	r := in.Rank()
	if r != n+1 && r != n+2 {
		return fracPool{}, Errorf("%s: Expected %dD or %dD tensor, but got: %s", fracName(n), n+1, n+2, shapeString(in.Sizes))
	}
	for i := 1; i < r; i++ {
		if in.Sizes[i] <= 0 {
			return fracPool{}, Errorf("%s: Expected input to have non-zero size for non-batch dimensions, but got%s with dimension %d being empty.",
				fracName(n), shapeString(in.Sizes), i)
		}
	}
	q := fracPool{n: n, lead: in.Sizes[:r-n], in: in.Sizes[r-n:], kernel: ks, out: out}
	q.batch = 1
	if r == n+2 {
		q.batch = in.Sizes[0]
	}
	q.planes = numel(q.lead)
	names := []string{"height", "width"}
	order := []int{0, 1}
	if n == 3 {
		names = []string{"time", "height", "width"}
		order = []int{0, 2, 1} // CPU checks time, width, height
	}
	for _, i := range order {
		if n == 2 && out[i]+ks[i]-1 > q.in[i] || n == 3 && out[i]+ks[i]-1 >= q.in[i] {
			return fracPool{}, Errorf("%s: pool %s %d too large relative to input %s %d", fracName(n), names[i], ks[i], names[i], q.in[i])
		}
	}
	s := c.Meta(3)
	if s.DType != in.DType {
		return fracPool{}, Errorf("Expect _random_samples to have the same dtype as input")
	}
	if s.Rank() != 3 {
		return fracPool{}, Errorf("Expect _random_samples to have 3 dimensions, got %d", s.Rank())
	}
	if s.Sizes[0] < q.batch {
		return fracPool{}, Errorf("Expect _random_samples.size(0) no less then input batch size.")
	}
	if s.Sizes[1] != q.lead[len(q.lead)-1] {
		return fracPool{}, Errorf("Expect _random_samples.size(1) equals to input channel size.")
	}
	if s.Sizes[2] != int64(n) {
		return fracPool{}, Errorf("Expect _random_samples.size(2) equals to %d; got %d.", n, s.Sizes[2])
	}
	return q, nil
}

// fracStarts returns the window starts along one spatial dim for every
// plane ([planes, out] int64), from the planes' samples u ([planes] float):
// floor((i + u) * alpha) - floor(u * alpha) with alpha = (in - k) / (out - 1),
// and in - k for the last window, computed in the input's float type.
func fracStarts(b *hlo.Builder, u *hlo.Value, d DType, planes, in, k, out int64) *hlo.Value {
	ce := computeType(d)
	round := func(v *hlo.Value) *hlo.Value {
		if d == Float16 || d == BFloat16 {
			return b.Convert(b.Convert(v, d.Elem()), ce)
		}
		return v
	}
	shape := []int64{planes, out}
	last := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), in-k), shape)
	if out == 1 {
		return last
	}
	alpha := round(b.Div(b.Scalar(ce, float64(in-k)), b.Scalar(ce, float64(out-1))))
	alphaB := b.BroadcastTo(alpha, shape)
	ub := b.BroadcastInDim(u, shape, []int64{0})
	i := b.Iota(hlo.T(ce, shape...), 1)
	hi := b.Convert(round(b.Mul(round(b.Add(i, ub)), alphaB)), hlo.S64)
	lo := b.Convert(round(b.Mul(ub, alphaB)), hlo.S64)
	start := b.Sub(hi, lo)
	isLast := b.Compare(hlo.EQ, b.Iota(hlo.T(hlo.S64, shape...), 1), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), out-1), shape))
	start = b.Select(isLast, last, start)
	return b.Clamp(b.ConstantInt(hlo.T(hlo.S64), 0), start, b.ConstantInt(hlo.T(hlo.S64), in-k))
}

// fractionalMaxPool builds fractional_max_pool{2,3}d(self, kernel_size,
// output_size, random_samples): the maximum of each pseudo-random window
// and its flat position in the input plane, as CPU computes them from the
// same samples (the first maximum wins; NaN wins, the last one among NaNs).
func fractionalMaxPool(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		in := c.Meta(0)
		q, err := c.fracArgs(n)
		if err != nil {
			return nil, err
		}
		b := c.B
		shape := append(append([]int64{}, q.lead...), q.out...)
		if numel(shape) == 0 {
			return []*hlo.Value{b.Constant(hlo.T(in.DType.Elem(), shape...), 0), b.ConstantInt(hlo.T(hlo.S64, shape...), 0)}, nil
		}
		P, S := q.planes, numel(q.in)
		// The samples of plane p are elements p*n .. p*n+n-1 of the flat tensor.
		s := b.Reshape(c.T(3), numel(c.Meta(3).Sizes))
		s = b.Reshape(sliceDim(b, s, 0, 0, P*int64(n)), P, int64(n))
		s = b.Convert(s, computeType(in.DType))
		sampleOf := []int64{1, 0} // 2d: sample 0 is for the width, 1 for the height
		if n == 3 {
			sampleOf = []int64{0, 1, 2}
		}
		full := []int64{P}
		full = append(full, q.out...)
		full = append(full, q.kernel...)
		var idx *hlo.Value
		stride := S
		for i := 0; i < n; i++ {
			stride /= q.in[i]
			u := b.Reshape(sliceDim(b, s, 1, sampleOf[i], sampleOf[i]+1), P)
			st := fracStarts(b, u, in.DType, P, q.in[i], q.kernel[i], q.out[i])
			tri := []int64{P, q.out[i], q.kernel[i]}
			pos := b.Add(b.BroadcastInDim(st, tri, []int64{0, 1}), b.Iota(hlo.T(hlo.S64, tri...), 2))
			term := b.Mul(pos, b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), stride), tri))
			term = b.BroadcastInDim(term, full, []int64{0, int64(1 + i), int64(1 + n + i)})
			if idx == nil {
				idx = term
			} else {
				idx = b.Add(idx, term)
			}
		}
		O, K := numel(q.out), numel(q.kernel)
		idx = b.Reshape(idx, P, O, K)
		base := b.Mul(b.Iota(hlo.T(hlo.S64, P, O, K), 0), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), S), []int64{P, O, K}))
		x := b.Reshape(c.T(0), P*S)
		v := b.GatherFlat(x, b.Add(idx, base))
		// Among NaNs CPU keeps the last: negative keys make the largest index the smallest.
		isNaN := b.Compare(hlo.NE, v, v)
		neg := b.Sub(b.Neg(idx), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 1), idx.T.Shape))
		mv, mi := b.ReduceArg(v, b.Select(isNaN, neg, idx), 2, hlo.GT)
		zero := b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 0), mi.T.Shape)
		mi = b.Select(b.Compare(hlo.LT, mi, zero), b.Sub(b.Neg(mi), b.BroadcastTo(b.ConstantInt(hlo.T(hlo.S64), 1), mi.T.Shape)), mi)
		// A window of -inf only keeps its first position, as CPU does.
		first := b.Reshape(sliceDim(b, idx, 2, 0, 1), P, O)
		ninf := b.BroadcastTo(b.Scalar(in.DType.Elem(), hlo.Lowest(in.DType.Elem())), mv.T.Shape)
		mi = b.Select(b.Compare(hlo.EQ, mv, ninf), first, mi)
		return []*hlo.Value{b.Reshape(mv, shape...), b.Reshape(mi, shape...)}, nil
	}
}

// fractionalMaxPoolBackward builds fractional_max_pool{2,3}d_backward(
// grad_output, self, kernel_size, output_size, indices): each output
// gradient added into the input position its index names.
func fractionalMaxPoolBackward(n int) Fn {
	return func(c *Ctx) ([]*hlo.Value, error) {
		gm, in, im := c.Meta(0), c.Meta(1), c.Meta(4)
		out := c.Ints(3, nil)
		r := in.Rank()
		if r < n+1 || len(out) != n {
			return nil, Errorf("fractional_max_pool%dd_backward(): input %s does not match output_size %v", n, in, out)
		}
		want := append(append([]int64{}, in.Sizes[:r-n]...), out...)
		if n == 2 {
			if !slices.Equal(gm.Sizes, want) {
				return nil, Errorf("fractional_max_pool2d_backward(): gradOutput sizes unexpected")
			}
			if !slices.Equal(im.Sizes, want) {
				return nil, Errorf("fractional_max_pool2d_backward(): indices sizes unexpected")
			}
		} else {
			for i, nm := range []string{"time", "height", "width"} {
				if gm.Rank() != r || gm.Sizes[r-n+i] != out[i] {
					return nil, Errorf("fractional_max_pool3d_backward_out(): gradOutput %s unexpected", nm)
				}
			}
			if !slices.Equal(gm.Sizes, want) || !slices.Equal(im.Sizes, want) {
				return nil, Errorf("fractional_max_pool3d_backward_out(): gradOutput %s and indices %s do not match %s", gm, im, shapeString(want))
			}
		}
		if im.DType != Int64 {
			return nil, Errorf("fractional_max_pool%dd_backward(): expected int64 indices, got %s", n, im.DType)
		}
		planes := numel(in.Sizes[:r-n])
		if numel(in.Sizes) == 0 || numel(out) == 0 {
			return []*hlo.Value{c.B.Constant(in.Type(), 0)}, nil
		}
		res := scatterPlanes(c.B, c.T(0), c.T(4), in.DType.Elem(), planes, numel(out), numel(in.Sizes[r-n:]))
		return []*hlo.Value{c.B.Reshape(res, in.Sizes...)}, nil
	}
}

func init() {
	def("aten::fractional_max_pool2d", fractionalMaxPool(2), "aten::fractional_max_pool2d.output")
	def("aten::fractional_max_pool3d", fractionalMaxPool(3), "aten::fractional_max_pool3d.output")
	def("aten::fractional_max_pool2d_backward", fractionalMaxPoolBackward(2), "aten::fractional_max_pool2d_backward.grad_input")
	def("aten::fractional_max_pool3d_backward", fractionalMaxPoolBackward(3), "aten::fractional_max_pool3d_backward.grad_input")
}
